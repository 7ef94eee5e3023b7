#include "precdetect/load/dcp/dcp_safetensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "precdetect/core/error.h"
#include "precdetect/load/dcp/dcp_metadata.h"

namespace precdetect {
namespace {

// _hf_utils.py: CUSTOM_METADATA_KEY, SAVED_OFFSETS_KEY.
constexpr std::string_view kShardingInfo = "DCP_SHARDING_INFO";
constexpr std::string_view kSavedOffsets = "saved_offsets";

std::vector<int64_t> saved_offsets(const nlohmann::json& info, const TensorRecord& record,
                                   const std::filesystem::path& path) {
  auto entry = info.find(record.name);
  const nlohmann::json* offsets = nullptr;
  if (entry != info.end() && entry->is_object() && entry->contains(kSavedOffsets))
    offsets = &entry->at(std::string(kSavedOffsets));
  if (!offsets || !offsets->is_array() || offsets->size() != record.shape.size())
    fail(ErrorCode::kInvalidDcp, path,
         fmt::format("tensor `{}` has no {} of its {} dimensions in {}", record.name, kSavedOffsets,
                     record.shape.size(), kShardingInfo));
  std::vector<int64_t> read;
  for (const nlohmann::json& offset : *offsets) {
    if (!offset.is_number_unsigned() || offset.get<uint64_t>() > (1ull << 62))
      fail(ErrorCode::kInvalidDcp, path,
           fmt::format("tensor `{}`: its {} in {} are no counts", record.name, kSavedOffsets, kShardingInfo));
    read.push_back(offset.get<int64_t>());
  }
  return read;
}

}  // namespace

void mark_dcp_safetensors_chunks(std::span<TensorRecord> records, const std::map<std::string, std::string>& metadata,
                                 const std::filesystem::path& path) {
  auto text = metadata.find(std::string(kShardingInfo));
  if (text == metadata.end()) return;
  nlohmann::json info = nlohmann::json::parse(text->second, nullptr, false);
  if (!info.is_object())
    fail(ErrorCode::kInvalidDcp, path, fmt::format("its __metadata__ {} is no JSON object", kShardingInfo));
  for (TensorRecord& record : records)  // a scalar is whole
    if (!record.shape.empty()) record.chunk_of = ChunkOf{.shape = {}, .offsets = saved_offsets(info, record, path)};
}

void join_dcp_safetensors_chunks(Checkpoint& checkpoint) {
  std::map<std::string, std::vector<TensorRecord*>> chunks;  // of the marked tensors, by name
  for (TensorRecord& record : checkpoint.tensors)
    if (record.chunk_of && record.chunk_of->shape.empty() && !record.shape.empty())
      chunks[record.name].push_back(&record);
  for (auto& [name, records] : chunks) {
    const std::filesystem::path& path = checkpoint.files[records.front()->file]->path();
    DcpTensor tensor{.fqn = name, .size = std::vector<int64_t>(records.front()->shape.size(), 0)};
    for (const TensorRecord* record : records) {
      if (record->shape.size() != tensor.size.size())
        fail(ErrorCode::kInvalidDcp, checkpoint.files[record->file]->path(),
             fmt::format("the chunks of tensor `{}` have different numbers of dimensions", name));
      for (size_t d = 0; d < tensor.size.size(); ++d)  // each term below 2^62: no wrap
        tensor.size[d] = std::max(tensor.size[d], record->chunk_of->offsets[d] + record->shape[d]);
      tensor.chunks.push_back({.offsets = record->chunk_of->offsets, .sizes = record->shape});
    }
    check_dcp_tiling(tensor, path);
    bool whole = records.size() == 1;  // then at offset 0: the tiling check found no gap before it
    for (TensorRecord* record : records) {
      if (whole)
        record->chunk_of.reset();
      else
        record->chunk_of->shape = tensor.size;
    }
  }
}

}  // namespace precdetect
