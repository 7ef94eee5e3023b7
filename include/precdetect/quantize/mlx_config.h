#pragma once
/// What mlx-lm's config.json `quantization` says of one module: the schemes in quantize/ that read MLX's modes
/// (mlx_affine, microscaling) share it. mlx-lm writes the model's settings ({"group_size", "bits", "mode"}) and, for
/// a module quantized otherwise, an entry of its own under the module's path: its own settings (a mode of its own:
/// mxfp8 for some modules of an nvfp4 model), or `false` for a module left as it was. Its loader (mlx_lm.utils'
/// class_predicate, then mlx.nn.quantize) reads a module by its entry where it has one, else by the model's; an
/// entry without a mode is affine, as Linear.to_quantized's default is.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace precdetect {

/// One module's quantization: its mode ("affine", "mxfp4", "nvfp4", "mxfp8", or another MLX names) and, where the
/// settings give them, its group size and bits.
struct MlxModuleSettings {
  std::string mode;
  std::optional<int64_t> group_size;
  std::optional<int64_t> bits;
};

/// The settings `config`'s `quantization` (else its copy `quantization_config`, which mlx-lm writes beside it) gives
/// `module`; nullopt without MLX settings, and for a module whose entry leaves it unquantized (or is no object).
inline std::optional<MlxModuleSettings> mlx_module_settings(const nlohmann::json& config, const std::string& module) {
  if (!config.is_object()) return std::nullopt;
  const nlohmann::json* settings = nullptr;
  for (const char* key : {"quantization", "quantization_config"})
    if (config.contains(key) && config[key].is_object()) {
      settings = &config[key];
      break;
    }
  if (settings == nullptr) return std::nullopt;
  const nlohmann::json& chosen = settings->contains(module) ? (*settings)[module] : *settings;
  if (!chosen.is_object()) return std::nullopt;
  auto integer = [&](const char* key) -> std::optional<int64_t> {
    if (!chosen.contains(key) || !chosen[key].is_number_integer()) return std::nullopt;
    return chosen[key].get<int64_t>();
  };
  std::string mode = "affine";
  if (chosen.contains("mode")) {
    if (!chosen["mode"].is_string()) return std::nullopt;
    mode = chosen["mode"].get<std::string>();
  }
  return MlxModuleSettings{.mode = mode, .group_size = integer("group_size"), .bits = integer("bits")};
}

}  // namespace precdetect
