// A model opened for analysis: its checkpoint as load reads it, then linked by every quantization scheme with what
// the model says of its quantization: config.json's `quantization_config` (or mlx-lm's `quantization`), or a
// quantizer's own settings file beside the weights where config.json has none.

#include <filesystem>
#include <nlohmann/json.hpp>

#include "precdetect/core/confinement.h"
#include "precdetect/net/text_file.h"
#include "precdetect/quantize/linked_checkpoint.h"

namespace precdetect {
namespace {

/// The JSON object in `file`; null where it is absent or unreadable (the weights are still scanned: a config is
/// never worth failing a scan for).
nlohmann::json json_object(const std::filesystem::path& file) {
  try {
    nlohmann::json object = nlohmann::json::parse(read_text_file(file, file.filename().string()));
    return object.is_object() ? object : nullptr;
  } catch (const std::exception&) {
    return nullptr;
  }
}

/// The settings a quantizer writes in a file of its own beside the weights, as config.json's `quantization_config`
/// would hold them: AutoGPTQ's quantize_config.json, and optimum-quanto's quantization map (`quanto_qmap.json` from
/// its QuantizedModelFor*.save_pretrained, `quantization_map.json` as its README saves quantization_map(model)),
/// which becomes {"quant_method": "quanto", "quantization_map": map}. Null where none is there.
nlohmann::json quantizer_settings(const std::filesystem::path& folder) {
  std::error_code error;
  if (std::filesystem::is_regular_file(folder / "quantize_config.json", error)) {
    nlohmann::json gptq = json_object(folder / "quantize_config.json");
    if (gptq.is_object() && !gptq.contains("quant_method")) gptq["quant_method"] = "gptq";
    return gptq;
  }
  for (const char* name : {"quanto_qmap.json", "quantization_map.json"})
    if (std::filesystem::is_regular_file(folder / name, error))
      if (nlohmann::json map = json_object(folder / name); map.is_object())
        return {{"quant_method", "quanto"}, {"quantization_map", std::move(map)}};
  return nullptr;
}

/// `config` (config.json's object, or null) for what it says of the weights' quantization, with a quantizer's own
/// settings file beside it (quantizer_settings) as its `quantization_config` where config.json has none (AutoGPTQ
/// and optimum-quanto write theirs only there).
nlohmann::json with_quantizer_settings(nlohmann::json config, const ModelSource& source) {
  std::error_code error;
  std::filesystem::path folder = source.config                                       ? source.config->parent_path()
                                 : std::filesystem::is_directory(source.path, error) ? source.path
                                                                                     : source.path.parent_path();
  if (!config.is_null() && config.contains("quantization_config")) return config;
  if (nlohmann::json settings = quantizer_settings(folder); settings.is_object()) {
    if (config.is_null()) config = nlohmann::json::object();
    config["quantization_config"] = std::move(settings);
  }
  return config;
}

}  // namespace

LinkedCheckpoint open_model(const ModelSource& source, ReadMode mode) {
  Checkpoint checkpoint = open_checkpoint(source, mode);
  Confined confined(source.root);  // config.json and the settings beside it are the model's files too
  nlohmann::json config = source.config ? json_object(*source.config) : nullptr;
  LinkedCheckpoint model =
      link_checkpoint(std::move(checkpoint), with_quantizer_settings(config, source), source.path.string());
  model.config = std::move(config);
  return model;
}

}  // namespace precdetect
