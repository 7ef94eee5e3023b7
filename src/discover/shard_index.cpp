#include "precdetect/discover/shard_index.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

#include "precdetect/core/error.h"
#include "precdetect/net/text_file.h"

namespace precdetect {
namespace {

/// A shard must live beside (or below) its index: no absolute paths, no "..", so an index cannot point at
/// /etc/passwd or a sibling model.
bool stays_inside(const std::filesystem::path& relative) {
  if (relative.empty() || relative.is_absolute()) return false;
  for (const auto& part : relative)
    if (part == "..") return false;
  return true;
}

nlohmann::json parse_json(std::string_view text, const std::filesystem::path& path) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorCode::kInvalidIndex, path, fmt::format("invalid JSON in shard index: {}", e.what()));
  }
}

}  // namespace

ShardIndex read_shard_index(const std::filesystem::path& index_path) {
  return parse_shard_index(read_text_file(index_path, "shard index"), index_path);
}

ShardIndex parse_shard_index(std::string_view text, const std::filesystem::path& index_path) {
  nlohmann::json index = parse_json(text, index_path);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    fail(ErrorCode::kInvalidIndex, index_path, "shard index has no \"weight_map\" object");
  ShardIndex result;
  std::set<std::string> shards;
  for (const auto& [name, shard] : index["weight_map"].items()) {
    if (!shard.is_string())
      fail(ErrorCode::kInvalidIndex, index_path, fmt::format("weight_map entry `{}` is not a file name", name));
    std::string file = shard.get<std::string>();
    if (!stays_inside(file))
      fail(ErrorCode::kPathEscape, index_path,
           fmt::format("weight_map entry `{}` points outside the model folder: `{}`", name, file));
    result.weight_map[name] = file;
    shards.insert(file);
  }
  result.shards.assign(shards.begin(), shards.end());
  return result;
}

}  // namespace precdetect
