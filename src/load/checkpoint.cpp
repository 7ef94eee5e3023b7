#include "precdetect/load/checkpoint.h"

#include <fmt/format.h>

#include <cstring>
#include <set>

#include "precdetect/core/error.h"
#include "precdetect/load/safetensors.h"

namespace precdetect {
namespace {

bool starts_with(const ByteSource& source, std::string_view magic) {
  if (source.size() < magic.size()) return false;
  auto head = source.view(0, magic.size());
  return std::memcmp(head.data(), magic.data(), magic.size()) == 0;
}

/// PyTorch writes zip archives ("PK\x03\x04") or, before 1.6, a pickle stream (protocol 2: 0x80 0x02).
bool looks_like_pytorch(const ByteSource& source) {
  return starts_with(source, "PK\x03\x04") || starts_with(source, "\x80\x02");
}

void append_file(Checkpoint& checkpoint, std::unique_ptr<ByteSource> source) {
  size_t index = checkpoint.files.size();
  if (looks_like_safetensors(*source)) {
    auto header = read_safetensors_header(*source, index);
    checkpoint.format = "safetensors";
    for (auto& record : header.tensors) checkpoint.tensors.push_back(std::move(record));
  } else if (looks_like_pytorch(*source)) {
    fail(ErrorCode::kUnsupportedFormat, source->path(),
         "a PyTorch checkpoint; this version of precdetect reads safetensors");
  } else if (source->path().extension() == ".safetensors") {
    read_safetensors_header(*source, index);  // not plausibly safetensors: say precisely which rule it breaks
  } else {
    fail(ErrorCode::kUnknownFormat, source->path(), "unknown checkpoint format");
  }
  checkpoint.files.push_back(std::move(source));
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

Checkpoint open_checkpoint(const ModelSource& source) {
  Checkpoint checkpoint;
  for (const auto& file : source.files) append_file(checkpoint, map_file(file));
  if (!source.weight_map.empty()) check_against_index(checkpoint, source);
  return checkpoint;
}

}  // namespace precdetect
