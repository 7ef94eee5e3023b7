#pragma once
/// What compressed-tensors' `quantization_config` says of its formats: the one its schemes in quantize/ share.

#include <nlohmann/json.hpp>
#include <string_view>

namespace precdetect {

/// Whether config.json's `quantization_config` is compressed-tensors' and stores some weights in `format`
/// ("nvfp4-pack-quantized", "int-quantized"): its `format`, or a config group's (a mixed-precision checkpoint's).
inline bool compressed_tensors_format(const nlohmann::json& config, std::string_view format) {
  if (!config.is_object() || !config.contains("quantization_config")) return false;
  const nlohmann::json& settings = config["quantization_config"];
  auto is = [&](const nlohmann::json& object, const char* key, std::string_view value) {
    return object.is_object() && object.contains(key) && object[key].is_string() &&
           object[key].get<std::string>() == value;
  };
  if (!is(settings, "quant_method", "compressed-tensors")) return false;
  if (is(settings, "format", format)) return true;
  if (!settings.contains("config_groups") || !settings["config_groups"].is_object()) return false;
  for (const auto& [name, group] : settings["config_groups"].items())
    if (is(group, "format", format)) return true;
  return false;
}

}  // namespace precdetect
