#pragma once
/// Every file precdetect writes goes through here: a regular file appears whole or not at all, and whatever else a
/// path names (a device, a FIFO, a descriptor of this process) is written as it is, never replaced.

#include <filesystem>
#include <string_view>

namespace precdetect {

/// What an output path names, and so how it may be written.
struct OutputTarget {
  enum class Kind {
    kFile,        ///< a regular file or a new name: replaced atomically (a temporary beside it, then rename)
    kInPlace,     ///< a character or block device, a FIFO, a socket, anything under /proc: opened and written
    kDescriptor,  ///< one of this process's open descriptors (/dev/stdout, /dev/fd/N, /proc/self/fd/N)
  };
  Kind kind = Kind::kFile;
  /// kFile: the file itself, every symbolic link followed (so the link stays a link); otherwise the path as given.
  std::filesystem::path path;
  int descriptor = -1;  ///< kDescriptor: the descriptor's number
};

/// Follows `path`'s symbolic links (at most 40) to what it names. Throws Error(kIo) naming `path` when that is a
/// folder, when its folder is missing or unreadable, or when the links loop.
OutputTarget resolve_output_target(const std::filesystem::path& path);

/// Writes `content` to `path` as resolve_output_target says: a regular file through a temporary beside it that is
/// flushed to disk and renamed over it (keeping its permissions), removed on failure and on SIGINT, SIGTERM or
/// SIGHUP while it is written (the process then dies of that signal); anything else written in place. Throws
/// Error(kIo) naming `path`. One call at a time.
void write_output_file(const std::filesystem::path& path, std::string_view content);

/// Appends `content` to `path` (created when missing) in one write where the system allows: what a job summary
/// such as $GITHUB_STEP_SUMMARY, which other steps add to as well, needs. Throws Error(kIo) naming `path`.
void append_output_file(const std::filesystem::path& path, std::string_view content);

}  // namespace precdetect
