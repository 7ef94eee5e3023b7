#include "precdetect/classify/evidence/adapters.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <vector>

namespace precdetect {
namespace {

/// The LoRA tensor names each writer uses (kohya-ss sd-scripts networks/lora.py; diffusers' LoRA loaders, old
/// attention-processor and new PEFT-style keys; PEFT's save_pretrained).
struct NamePattern {
  AdapterFormat format;
  std::regex pattern;
};

const std::vector<NamePattern>& lora_names() {
  static const std::vector<NamePattern> patterns = {
      {AdapterFormat::kKohya,
       std::regex(R"(^lora_(unet|te\d?)_.*[._](lora_down\.weight|lora_up\.weight|alpha|dora_scale)$)")},
      {AdapterFormat::kDiffusers,
       std::regex(R"(^(unet|text_encoder(_2)?|transformer)\..*\.(lora_[AB]\.weight|lora\.(down|up)\.weight)$)")},
      {AdapterFormat::kDiffusers, std::regex(R"(\.processor\.\w+_lora\.(down|up)\.weight$)")},
      {AdapterFormat::kPeft, std::regex(R"(\.lora_(A|B|embedding_A|embedding_B|magnitude_vector)(\.weight)?$)")},
  };
  return patterns;
}

/// A PEFT adapter with `config` (adapter_config.json; discarded where it could not be read): its base model when it
/// names one.
Adapter peft_adapter(const nlohmann::json& config) {
  if (config.is_discarded())
    return {.format = AdapterFormat::kPeft, .found_by = "adapter_config.json (unreadable: no base model read from it)"};
  Adapter adapter{.format = AdapterFormat::kPeft, .found_by = "adapter_config.json"};
  if (auto base = config.is_object() ? config.find("base_model_name_or_path") : config.end();
      base != config.end() && base->is_string() && !base->get<std::string>().empty())
    adapter.base_model = base->get<std::string>();
  return adapter;
}

/// The writer most tensor names follow, when more than half are LoRA names of that writer.
std::optional<Adapter> adapter_by_names(std::span<const std::string> tensor_names) {
  std::map<AdapterFormat, size_t> matched;
  for (const std::string& name : tensor_names)
    for (const NamePattern& entry : lora_names())
      if (std::regex_search(name, entry.pattern)) {
        ++matched[entry.format];
        break;
      }
  for (const auto& [format, count] : matched)
    if (2 * count > tensor_names.size())
      return Adapter{.format = format,
                     .found_by = fmt::format("tensor names: {} of {} are {} LoRA names", count, tensor_names.size(),
                                             adapter_format_name(format))};
  return std::nullopt;
}

}  // namespace

std::string_view adapter_format_name(AdapterFormat format) {
  switch (format) {
    case AdapterFormat::kPeft:
      return "peft";
    case AdapterFormat::kDiffusers:
      return "diffusers";
    case AdapterFormat::kKohya:
      return "kohya";
  }
  return "peft";
}

std::optional<Adapter> identify_adapter(const std::optional<nlohmann::json>& peft_config,
                                        std::span<const std::string> tensor_names) {
  if (peft_config) return peft_adapter(*peft_config);
  return adapter_by_names(tensor_names);
}

void adopt_base_verdict(Verdict& adapter, const Verdict& base) {
  adapter.label = base.label;
  adapter.candidates = base.candidates;
  adapter.confidence = base.confidence;
  adapter.decided_by = base.decided_by;
  adapter.documented = base.documented;
  if (adapter.documented) adapter.documented->base_model = true;
  adapter.conflicts = base.conflicts;
  std::erase_if(adapter.fp16_risk_reasons, [](const Fp16RiskReason& r) { return r.kind == Fp16RiskKind::kDocumented; });
  for (const Fp16RiskReason& reason : base.fp16_risk_reasons)
    if (reason.kind == Fp16RiskKind::kRange || reason.kind == Fp16RiskKind::kDocumented)
      adapter.fp16_risk_reasons.push_back(reason);
}

}  // namespace precdetect
