#pragma once
/// Opening a file someone else chose, for reading: never blocks on a FIFO, never accepts what has no end.

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <utility>

namespace precdetect {

/// An open descriptor and what fstat said of it; the descriptor is closed when the object goes.
class OpenFile {
 public:
  explicit OpenFile(int fd) : fd_(fd) {}
  ~OpenFile();
  OpenFile(OpenFile&& other) noexcept : fd_(std::exchange(other.fd_, -1)), status_(other.status_) {}
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  OpenFile& operator=(OpenFile&&) = delete;

  int fd() const { return fd_; }
  uint64_t size() const { return static_cast<uint64_t>(status_.st_size); }
  const struct stat& status() const { return status_; }
  /// Hands the descriptor over: the caller closes it.
  int release() { return std::exchange(fd_, -1); }

 private:
  friend OpenFile checked_open(int fd, const std::filesystem::path&, std::string_view, bool);
  int fd_;
  struct stat status_ {};
};

/// Opens `path`, a file of the model being read (`what` it is, for messages), read-only, beneath the root of the
/// Confined scope this thread holds (core/confinement.h). Only a regular file is accepted, or with `allow_pipe` also a
/// pipe: a FIFO beside the weights that nobody writes would block forever, and a device (/dev/zero) has no end.
/// Throws Error(kNotFound) for a missing file, Error(kPathEscape) for one outside the root (by a symbolic link, or
/// a hard link: a file with a name outside the root is closed unread, core/hard_links.h), Error(kIo) otherwise,
/// naming the path; Error(kInternal) when no scope is live: a model's files are opened confined or not at all, so a
/// reader that forgets the scope fails its first test instead of reading outside the model.
OpenFile open_for_reading(const std::filesystem::path& path, std::string_view what, bool allow_pipe = false);

/// Opens a file the user named (a rules file, a --from list, `--from <(find ...)`'s pipe, a --verify manifest) as
/// given, links followed: the user chose it. The same checks as open_for_reading otherwise.
OpenFile open_user_file(const std::filesystem::path& path, std::string_view what, bool allow_pipe = false);

}  // namespace precdetect
