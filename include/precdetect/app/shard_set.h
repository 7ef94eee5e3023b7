#pragma once
/// The --jsonl outputs `merge` combines, read and checked as one set: the parts of a sharded batch each present
/// once, complete, of the same N and the same input list, and no input in two of them.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "precdetect/discover/input_list.h"

namespace precdetect {

/// One --jsonl file as `merge` reads it.
struct JsonlPart {
  std::filesystem::path file;
  nlohmann::ordered_json models = nlohmann::ordered_json::array();  ///< its model records, "type" dropped
  std::optional<ShardPart> shard;  ///< from its summary line, for the output of a --shard run
  /// Why it is not a whole --jsonl output: cut short (no summary line, fewer model lines than the summary counts,
  /// a last line cut mid-record) or not precdetect's (a line that is no record). Empty when it is whole.
  std::string truncated, foreign;
};

/// Reads `file`; never throws for its content (what is wrong is in `truncated` or `foreign`). Throws Error(kIo)
/// when it cannot be opened.
JsonlPart read_jsonl_part(const std::filesystem::path& file);

/// What keeps `parts` from making one batch, in two kinds: a part missing or cut short (`incomplete`: a partial
/// set, which `merge --partial` may merge on purpose), and a set that is not one (`mixed`: a part twice, of
/// another N or input list, a file of another kind or not precdetect's, an input in two parts).
struct ShardSetProblems {
  std::vector<std::string> incomplete, mixed;
};

ShardSetProblems check_shard_set(const std::vector<JsonlPart>& parts);

}  // namespace precdetect
