#pragma once
/// Adapters: weights saved apart from the model they change (LoRA and its kin). Their small matrices say nothing
/// about how the base was pretrained, so an adapter's pretraining answer is its base model's (docs/method.md,
/// "Adapters").

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "precdetect/classify/verdict.h"
#include "precdetect/core/named_enum.h"

namespace precdetect {

/// Who wrote the adapter, as its files show it.
enum class AdapterFormat {
  kPeft,       ///< PEFT's save_pretrained: adapter_config.json beside adapter_model.safetensors / .bin
  kDiffusers,  ///< diffusers' LoRA weights: `unet.` / `text_encoder.` / `transformer.` names ending in lora_A/B,
               ///< or the attention processors' `to_k_lora.down` names
  kKohya,      ///< kohya-ss sd-scripts and A1111: `lora_unet_` / `lora_te_` names ending in lora_down/lora_up/alpha
};

/// "peft", "diffusers", "kohya" (JSON `adapter.format`).
std::string_view adapter_format_name(AdapterFormat format);

struct Adapter {
  AdapterFormat format = AdapterFormat::kPeft;
  /// The base model as the adapter names it (adapter_config.json's base_model_name_or_path): a hub id or a path;
  /// nullopt when it names none (LoRA files without a config never do).
  std::optional<std::string> base_model;
  std::string found_by;  ///< "adapter_config.json", or "tensor names: 256 of 256 are kohya LoRA names"
};

/// The adapter a model is, or nullopt for a model: a PEFT adapter with `peft_config` (its adapter_config.json as
/// app/peft_config.h read it: nullopt where there is none, a discarded value where it could not be read), or tensor
/// names that are mostly LoRA pairs of one writer. A checkpoint that holds a few LoRA tensors among a full model's
/// stays a model. Reads no file.
std::optional<Adapter> identify_adapter(const std::optional<nlohmann::json>& peft_config,
                                        std::span<const std::string> tensor_names);

/// The adapter's verdict takes its base's, as scanned: label, candidates, confidence, what decided, the documented
/// entry (as a base's), the conflicts, and the base's range and documented fp16 risks beside the adapter's own cast
/// risks.
void adopt_base_verdict(Verdict& adapter, const Verdict& base);

}  // namespace precdetect

template <>
struct fmt::formatter<precdetect::AdapterFormat>
    : precdetect::NamedEnumFormatter<precdetect::AdapterFormat, precdetect::adapter_format_name> {};
