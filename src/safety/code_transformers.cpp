// transformers' places (and diffusers' `auto_map`, which its AutoModel and modular pipelines read the same way),
// as transformers 5.23.0 reads them: every one is imported only with trust_remote_code=True, and without it
// transformers prompts (a terminal, 15 s) or refuses (dynamic_module_utils.py:714, resolve_trust_remote_code).
// Sources per place: docs/security.md, "Code the loaders import".

#include <fmt/format.h>

#include <array>

#include "precdetect/safety/code_places.h"

namespace precdetect {
namespace {

/// The configs whose `auto_map` an Auto class reads: AutoConfig and AutoModel* (config.json,
/// models/auto/auto_factory.py:358), AutoTokenizer (tokenizer_config.json, tokenization_auto.py), AutoProcessor
/// (processor_config.json, processing_auto.py:251), AutoImageProcessor and AutoFeatureExtractor
/// (preprocessor_config.json, image_processing_auto.py:639, feature_extraction_auto.py:332), AutoVideoProcessor
/// (video_preprocessor_config.json, video_processing_auto.py:367); diffusers' ModularPipelineBlocks
/// (modular_config.json, modular_pipelines/modular_pipeline.py). A diffusers component's folder holds the same
/// names, loaded from that folder (diffusers models/auto_model.py:109 reads a component's config.json).
constexpr std::array<std::string_view, 6> kAutoMapConfigs = {"config.json",
                                                             "tokenizer_config.json",
                                                             "processor_config.json",
                                                             "preprocessor_config.json",
                                                             "video_preprocessor_config.json",
                                                             "modular_config.json"};

constexpr std::string_view kAsked =
    "transformers (and diffusers) import it with trust_remote_code=True; without it they ask or refuse";

/// Every class reference in an `auto_map` value: a string, a tokenizer's [slow, fast] pair (nulls aside), or an
/// image processor's {backend: reference} (image_processing_auto.py:479, _resolve_auto_map_class_ref).
std::vector<std::string> references_in(const nlohmann::json& value) {
  std::vector<std::string> found;
  if (value.is_string()) found.push_back(value.get<std::string>());
  if (value.is_array() || value.is_object())
    for (const auto& item : value)
      if (item.is_string()) found.push_back(item.get<std::string>());
  return found;
}

/// The code `reference` names, from the config `config_name` under `key`.
void reference_code(CodeSearch& search, const std::string& config_name, const std::string& key,
                    const std::string& reference) {
  std::string folder = config_name.substr(0, config_name.rfind('/') + 1);
  std::optional<ClassReference> parsed = parse_class_reference(reference);
  CustomCode code{.file = parsed ? parsed->file(folder) : reference,
                  .classes = {},
                  .named_by = fmt::format("{} {}", config_name, key),
                  .repository = parsed ? parsed->repository : "",
                  .consent = CodeConsent::kAsked,
                  .why = std::string(kAsked)};
  if (parsed) code.classes.push_back(parsed->qualified());
  search.code(std::move(code));
}

void auto_map_code(CodeSearch& search, const std::string& config_name) {
  const nlohmann::json* config = search.config(config_name);
  if (!config) return;
  auto map = config->find("auto_map");
  // tokenization_utils_base.py:1834: a legacy tokenizer_config.json's auto_map is AutoTokenizer's pair itself.
  if (map != config->end() && map->is_array())
    for (const std::string& reference : references_in(*map)) reference_code(search, config_name, "auto_map", reference);
  if (map != config->end() && map->is_object())
    for (const auto& [auto_class, value] : map->items())
      for (const std::string& reference : references_in(value))
        reference_code(search, config_name, "auto_map." + auto_class, reference);
}

/// pipelines/__init__.py:1032-1068: a task's `impl` is imported with trust_remote_code=True, refused without.
void custom_pipelines_code(CodeSearch& search, const std::string& config_name) {
  const nlohmann::json* config = search.config(config_name);
  if (!config) return;
  auto pipelines = config->find("custom_pipelines");
  if (pipelines == config->end() || !pipelines->is_object()) return;
  for (const auto& [task, pipeline] : pipelines->items())
    if (pipeline.is_object() && pipeline.contains("impl"))
      for (const std::string& reference : references_in(pipeline["impl"]))
        reference_code(search, config_name, fmt::format("custom_pipelines.{}.impl", task), reference);
}

}  // namespace

void find_transformers_code(CodeSearch& search) {
  for (std::string_view file_name : kAutoMapConfigs)
    for (const std::string& config_name : search.at_any_level(file_name)) auto_map_code(search, config_name);
  for (const std::string& config_name : search.at_any_level("config.json")) custom_pipelines_code(search, config_name);
  // generation/utils.py:580 and :589: from_pretrained(trust_remote_code=True) replaces `generate` with this file's
  // `generate`; generate(custom_generate=folder) runs it too, and before transformers#46483 (2026-06) did so for a
  // local folder without asking.
  if (search.has("custom_generate/generate.py"))
    search.code({.file = "custom_generate/generate.py",
                 .classes = {"generate"},
                 .named_by = "custom_generate/generate.py (its path: GenerationMixin.load_custom_generate)",
                 .repository = "",
                 .consent = CodeConsent::kAsked,
                 .why = "transformers imports it with trust_remote_code=True"});
}

}  // namespace precdetect
