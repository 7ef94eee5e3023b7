#pragma once
/// Small text files (indexes, rules, config.json), read whole.

#include <filesystem>
#include <string>

namespace precdetect {

/// The file's bytes. Throws Error(kNotFound) when it cannot be opened, naming the path and `what` it is.
std::string read_text_file(const std::filesystem::path& path, std::string_view what);

}  // namespace precdetect
