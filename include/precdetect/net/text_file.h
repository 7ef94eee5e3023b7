#pragma once
/// Small text files (indexes, config.json, rules, input lists), read whole, within limits.

#include <filesystem>
#include <string>

namespace precdetect {

/// Where a text file comes from, which sets what it may be.
enum class TextOrigin {
  kModel,     ///< beside the weights (index, config.json): opened confined (core/open_file.h), at most 64 MiB
  kUserFile,  ///< a file the user named (--rules, --registry): a regular file of at most 64 MiB
  kList,      ///< a file the user named that may also be a pipe (`--from <(find ...)`, a manifest): at most 1 GiB
};

/// The file's bytes, a model's file opened beneath its root (open_for_reading), a user's as named. Throws
/// Error(kNotFound) when it cannot be opened, Error(kIo) when it is not what `origin` allows (a FIFO beside the weights
/// would block forever, /dev/zero never ends) or larger, naming the path and `what` it is.
std::string read_text_file(const std::filesystem::path& path, std::string_view what,
                           TextOrigin origin = TextOrigin::kModel);

}  // namespace precdetect
