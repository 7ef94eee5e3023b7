#include "precdetect/load/checkpoint.h"

#include <fmt/format.h>

#include <set>

#include "precdetect/core/error.h"
#include "precdetect/load/safetensors.h"
#include "precdetect/load/torch_formats.h"
#include "precdetect/load/zip_reader.h"

namespace precdetect {
namespace {

/// The format chain: each format sniffs the file's first bytes; the first that claims it reads it.
std::string read_file(Checkpoint& checkpoint, size_t file) {
  const ByteSource& source = *checkpoint.files[file];
  if (looks_like_safetensors(source)) {
    for (auto& record : read_safetensors_header(source, file).tensors) checkpoint.tensors.push_back(std::move(record));
    return "safetensors";
  }
  if (looks_like_zip(source)) return read_torch_zip(checkpoint, file);
  if (looks_like_torch_legacy(source)) return read_torch_legacy(checkpoint, file);
  if (looks_like_tar(source)) return read_torch_tar(checkpoint, file);
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
  if (unindexed > 0)
    checkpoint.warnings.push_back(
        fmt::format("{} tensor(s) in the shards are not listed in the index; they were scanned anyway", unindexed));
}

}  // namespace

Checkpoint open_checkpoint(const ModelSource& source, ReadMode mode) {
  Checkpoint checkpoint;
  for (const auto& file : source.files) {
    checkpoint.files.push_back(map_file(file, mode));
    std::string format = read_file(checkpoint, checkpoint.files.size() - 1);
    if (!checkpoint.format.empty() && checkpoint.format != format)
      checkpoint.warnings.push_back(fmt::format("files of several formats: {} and {}", checkpoint.format, format));
    checkpoint.format = format;
  }
  if (!source.weight_map.empty()) check_against_index(checkpoint, source);
  return checkpoint;
}

}  // namespace precdetect
