#pragma once
/// Output files appear whole or not at all.

#include <filesystem>
#include <string_view>

namespace precdetect {

/// Writes `content` to a temporary file beside `path`, flushes it to disk, then renames it over `path`.
/// Throws Error(kIo) naming `path`; the temporary file is removed on failure, and on SIGINT, SIGTERM or SIGHUP
/// while it is written (the process then dies of that signal). One call at a time.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

}  // namespace precdetect
