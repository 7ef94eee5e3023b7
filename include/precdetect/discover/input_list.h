#pragma once
/// Batch inputs: list files (--from) and model folders found under a directory (--recursive).

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

}  // namespace precdetect
