#pragma once
/// Shard indexes (model.safetensors.index.json): which file of a sharded checkpoint holds each tensor.

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace precdetect {

struct ShardIndex {
  std::map<std::string, std::string> weight_map;  ///< tensor name -> shard file name (relative to the index)
  std::vector<std::string> shards;                ///< distinct shard names, sorted
};

/// Reads and validates an index: JSON object with a string->string "weight_map"; every shard name is a plain
/// relative path that stays inside the index's folder. Throws Error(kInvalidIndex) naming the index, Error(kPathEscape)
/// for a file outside its folder (an absolute path, a `..`).
ShardIndex read_shard_index(const std::filesystem::path& index_path);

/// The same over the index's text, named `index_path` in errors.
ShardIndex parse_shard_index(std::string_view text, const std::filesystem::path& index_path);

}  // namespace precdetect
