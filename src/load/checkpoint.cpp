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
#include "precdetect/net/text_file.h"
#include "precdetect/net/url.h"

namespace precdetect {
namespace {

/// The format chain: the one detection (file_format.h) opens the file in its format, which reads it.
FileFormat read_file(Checkpoint& checkpoint, size_t file) {
  const ByteSource& source = *checkpoint.files[file];
  std::unique_ptr<FormatFile> format = open_format(source);
  if (format) return checkpoint.formats.emplace_back(std::move(format))->read(checkpoint, file);
  if (source.path().extension() == ".safetensors")
    read_safetensors_header(source, file);  // not plausibly safetensors: say precisely which rule it breaks
  fail(ErrorCode::kUnknownFormat, source.path(), "unknown checkpoint format");
}

/// The name the index knows a shard by: a local file's name; a URL's last segment, percent-decoded (a shard named
/// `model 1.safetensors` is read from `.../model%201.safetensors`).
std::string shard_file_name(const std::filesystem::path& file) {
  return is_url(file.native()) ? url_file_name(file.native()) : file.filename().string();
}

/// Every tensor the index names must sit in the shard it names; tensors the index omits are reported.
void check_against_index(Checkpoint& checkpoint, const ModelSource& source) {
  std::set<std::pair<std::string, std::string>> found;
  for (const auto& record : checkpoint.tensors)
    found.emplace(record.name, shard_file_name(checkpoint.files[record.file]->path()));
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
    FileFormat format = read_file(checkpoint, checkpoint.files.size() - 1);
    // Mixed as a report names them: .npz and .npy files are both NumPy's
    std::string_view was = format_info(checkpoint.format).report_name, is = format_info(format).report_name;
    if (checkpoint.format != FileFormat::kUnknown && was != is)
      checkpoint.warnings.push_back({.code = WarningCode::kMixedFormats, .names = {std::string(was), std::string(is)}});
    checkpoint.format = format;
  }
  if (!source.other_formats.empty())
    checkpoint.warnings.push_back({.code = WarningCode::kOtherFormats, .names = source.other_formats});
  for (const auto& file : source.training_files) read_training_file(checkpoint, file);
  if (!source.weight_map.empty()) check_against_index(checkpoint, source);
  join_dcp_safetensors_chunks(checkpoint);
  check_unique_names(checkpoint);
  return checkpoint;
}

}  // namespace precdetect
