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
  /// Hands the descriptor over: the caller closes it.
  int release() { return std::exchange(fd_, -1); }

 private:
  friend OpenFile open_for_reading(const std::filesystem::path&, std::string_view, bool);
  int fd_;
  struct stat status_ {};
};

/// Opens `path` (`what` it is, for messages) read-only. Only a regular file is accepted, or with `allow_pipe`
/// also a pipe (`--from <(find ...)`): a FIFO beside the weights that nobody writes would block forever, and a
/// device (/dev/zero) has no end. Within a Confined scope (core/confinement.h) the path must resolve beneath the
/// model's root. Throws Error(kNotFound) for a missing file, Error(kPathEscape) for one outside the root,
/// Error(kIo) otherwise, naming the path.
OpenFile open_for_reading(const std::filesystem::path& path, std::string_view what, bool allow_pipe = false);

}  // namespace precdetect
