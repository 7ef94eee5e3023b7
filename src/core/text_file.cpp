#include "precdetect/core/text_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "precdetect/core/error.h"

namespace precdetect {
namespace {

/// Closes the descriptor however the read ends.
struct FileDescriptor {
  int fd;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_text_file(const std::filesystem::path& path, std::string_view what, TextOrigin origin) {
  bool model = origin == TextOrigin::kModel;
  uint64_t max_bytes = model ? uint64_t{64} << 20 : uint64_t{1} << 30;
  // O_NONBLOCK: opening a FIFO returns at once, and the check below refuses it.
  FileDescriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | (model ? O_NONBLOCK : 0))};
  if (file.fd < 0) fail(ErrorCode::kNotFound, path, fmt::format("cannot open {}: {}", what, std::strerror(errno)));
  struct stat st {};
  if (::fstat(file.fd, &st) != 0 || (!S_ISREG(st.st_mode) && (model || !S_ISFIFO(st.st_mode))))
    fail(ErrorCode::kIo, path, fmt::format("{} is not a regular file", what));
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    ssize_t got = ::read(file.fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(ErrorCode::kIo, path, fmt::format("cannot read {}: {}", what, std::strerror(errno)));
    if (got == 0) return text;
    if (text.size() + static_cast<uint64_t>(got) > max_bytes)
      fail(ErrorCode::kIo, path, fmt::format("{} is larger than {} MiB", what, max_bytes >> 20));
    text.append(buffer, static_cast<size_t>(got));
  }
}

}  // namespace precdetect
