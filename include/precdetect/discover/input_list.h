#pragma once
/// Batch inputs: list files (--from) and model folders found under a directory (--recursive).

#include <compare>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace precdetect {

/// The inputs named in a list file, one per line; blank lines and lines starting with '#' are skipped, and
/// surrounding whitespace is trimmed. "-" reads standard input. Throws Error(kIo) when the file cannot be read.
std::vector<std::string> read_input_list(const std::string& list_file);

/// Every folder under `root` (root included) that holds a model, in sorted order; the sub-folders of a folder
/// whose parts they are (holds_model_parts: pipeline components, Megatron ranks) are left to it. Symbolic links
/// to folders are not followed (no loops). A folder that cannot be listed is included (it may hold a model; scanning it
/// reports the io_error) but not entered. Throws Error(kNotFound) when `root` is no folder.
std::vector<std::string> find_model_folders(const std::filesystem::path& root);

/// Part `index` of `count` (0 <= index < count) of a batch split across machines (--shard K/N).
struct Shard {
  uint64_t index = 0, count = 1;
};

/// Whether `input` belongs to `shard`: by a fixed hash of the input as typed (FNV-1a, 64 bits), so the split is
/// the same on every machine and run, whatever the order of the list, and the shards cover every input once.
bool in_shard(const std::string& input, const Shard& shard);

/// What a --shard run covered, as its --jsonl summary tells `merge`: which part of how many, of which input list,
/// and how many of the list's inputs fell in it.
struct ShardPart {
  Shard shard;
  std::string inputs_digest;  ///< inputs_digest() of the whole list before the split
  uint64_t inputs = 0;        ///< the list's inputs in this part (each may stand for several models)
};

/// A model's place in an input list: its input's index in the list, and its index among that input's models (a
/// folder of several checkpoints is one input and several models).
struct ListPosition {
  uint64_t input = 0, model = 0;
  auto operator<=>(const ListPosition&) const = default;
};

/// The identity of an input list whatever its order: FNV-1a over its sorted inputs, as 16 hex digits.
std::string inputs_digest(std::vector<std::string> inputs);

}  // namespace precdetect
