#include "precdetect/load/checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "precdetect/core/confinement.h"
#include "precdetect/core/error.h"
#include "precdetect/load/dcp/dcp_safetensors.h"
#include "precdetect/load/file_format.h"
#include "precdetect/load/records/find_records.h"
#include "precdetect/load/safetensors/safetensors.h"
#include "precdetect/load/tensor_subclasses.h"
#include "precdetect/net/text_file.h"
#include "precdetect/net/url.h"
#include "precdetect/quantize/scheme.h"

namespace precdetect {
namespace {

/// The format chain: the one detection (file_format.h) opens the file in its format, which reads it.
std::string read_file(Checkpoint& checkpoint, size_t file) {
  const ByteSource& source = *checkpoint.files[file];
  std::unique_ptr<FormatFile> format = open_format(source);
  if (format) return checkpoint.formats.emplace_back(std::move(format))->read(checkpoint, file);
  if (source.path().extension() == ".nemo" && source.size() >= 2 && source.view(0, 2)[0] == std::byte{0x1f} &&
      source.view(0, 2)[1] == std::byte{0x8b})
    fail(ErrorCode::kUnknownFormat, source.path(),
         "a gzip-compressed NeMo archive: unpack it (tar xzf) and scan the model_weights.ckpt inside");
  if (source.path().extension() == ".safetensors")
    read_safetensors_header(source, file);  // not plausibly safetensors: say precisely which rule it breaks
  fail(ErrorCode::kUnknownFormat, source.path(), "unknown checkpoint format");
}

/// Every tensor the index names must sit in the shard it names; tensors the index omits are reported.
void check_against_index(Checkpoint& checkpoint, const ModelSource& source) {
  std::set<std::pair<std::string, std::string>> found;
  for (const auto& record : checkpoint.tensors)
    found.emplace(record.name, checkpoint.files[record.file]->path().filename().string());
  for (const auto& [name, shard] : source.weight_map) {
    if (!found.count({name, std::filesystem::path(shard).filename().string()}))
      fail(ErrorCode::kMissingTensor, source.path,
           fmt::format("tensor `{}` is listed in the index but not found in shard `{}`", name, shard));
  }
  size_t unindexed = checkpoint.tensors.size() - source.weight_map.size();
  if (unindexed > 0) checkpoint.warnings.push_back({.code = WarningCode::kUnindexedTensors, .count = unindexed});
}

/// Two tensors of one name are one model's contradiction, except across model-parallel shards, whose files each
/// hold a part of every tensor under its full name, and a tensor's chunks (their reader checked they tile it).
void check_unique_names(const Checkpoint& checkpoint) {
  std::map<std::string, size_t> file_of;
  for (const TensorRecord& record : checkpoint.tensors) {
    if (record.chunk_of) continue;
    auto [first, fresh] = file_of.emplace(record.name, record.file);
    if (fresh || (checkpoint.model_parallel && first->second != record.file)) {
      first->second = record.file;
      continue;
    }
    const auto& path = checkpoint.files[record.file]->path();
    const auto& other = checkpoint.files[first->second]->path();
    fail(ErrorCode::kDuplicateTensor, path,
         other == path ? fmt::format("tensor `{}` appears twice in this file", record.name)
                       : fmt::format("tensor `{}` is also in `{}`: these files are not shards of one model (scan "
                                     "them one by one)",
                                     record.name, other.filename().string()));
  }
}

/// The training records of a training-state file beside the weights (ModelSource::training_files): its name's,
/// or its pickle's. One that cannot be read is a warning: the weights are still the model.
void read_training_file(Checkpoint& checkpoint, const std::filesystem::path& file) {
  if (auto record = record_in_file_name(file)) return merge_record(checkpoint.records, std::move(*record));
  try {
    if (file.filename() == "config.yaml") {
      FoundRecords found = find_espnet_config_record(read_text_file(file, "ESPnet config"), file);
      for (TrainingRecord& record : found.records) merge_record(checkpoint.records, std::move(record));
      checkpoint.warnings.insert(checkpoint.warnings.end(), found.warnings.begin(), found.warnings.end());
      return;
    }
    Checkpoint state;
    state.files.push_back(map_file(file, ReadMode::kPread));
    read_file(state, 0);
    for (TrainingRecord& record : state.records) merge_record(checkpoint.records, std::move(record));
    checkpoint.warnings.insert(checkpoint.warnings.end(), state.warnings.begin(), state.warnings.end());
  } catch (const Error& e) {
    checkpoint.warnings.push_back({.code = WarningCode::kRecordUnreadable, .names = {e.what()}});
  }
}

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

/// config.json's object, for what it says of the weights' quantization, with a quantizer's own settings file beside
/// it (quantizer_settings) as its `quantization_config` where config.json has none (AutoGPTQ and optimum-quanto
/// write theirs only there).
nlohmann::json config_object(const ModelSource& source) {
  nlohmann::json config = source.config ? json_object(*source.config) : nullptr;
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

/// `file` of `source`, opened. An indexed shard a remote server answers 404 for is the index's kMissingShard, as
/// discovery names a local one (a remote index that came without a listing is checked here, file by file).
std::unique_ptr<ByteSource> open_file_of(const ModelSource& source, const std::filesystem::path& file, ReadMode mode) {
  try {
    return map_file(file, mode);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotFound || source.weight_map.empty() || !is_url(file.native())) throw;
    fail(ErrorCode::kMissingShard, file, fmt::format("a shard the index names is missing ({})", e.what()));
  }
}

}  // namespace

Checkpoint open_checkpoint(const ModelSource& source, ReadMode mode) {
  Confined confined(source.root);  // every file a format opens while reading the model
  Checkpoint checkpoint{.model_parallel = source.model_parallel};
  for (const auto& file : source.files) {
    checkpoint.files.push_back(open_file_of(source, file, mode));
    std::string format = read_file(checkpoint, checkpoint.files.size() - 1);
    if (!checkpoint.format.empty() && checkpoint.format != format)
      checkpoint.warnings.push_back({.code = WarningCode::kMixedFormats, .names = {checkpoint.format, format}});
    checkpoint.format = format;
  }
  if (!source.other_formats.empty())
    checkpoint.warnings.push_back({.code = WarningCode::kOtherFormats, .names = source.other_formats});
  for (const auto& file : source.training_files) read_training_file(checkpoint, file);
  if (!source.weight_map.empty()) check_against_index(checkpoint, source);
  join_dcp_safetensors_chunks(checkpoint);
  check_unique_names(checkpoint);
  link_quantized(checkpoint.tensors, with_tensor_subclasses(config_object(source), checkpoint.tensor_subclasses),
                 source.path.string());
  return checkpoint;
}

}  // namespace precdetect
