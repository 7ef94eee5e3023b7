#include "precdetect/app/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "precdetect/core/error.h"

namespace precdetect {

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  std::filesystem::path temp = path;
  temp += fmt::format(".tmp-{}", ::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(ErrorCode::kIo, path, fmt::format("cannot write: {}", std::strerror(errno)));
  size_t written = 0;
  while (written < content.size()) {
    ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  bool ok = written == content.size() && ::fsync(fd) == 0;
  int err = errno;
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(temp.c_str(), path.c_str()) != 0) {
    err = ok ? errno : err;
    ::unlink(temp.c_str());
    fail(ErrorCode::kIo, path, fmt::format("cannot write: {}", std::strerror(err)));
  }
}

}  // namespace precdetect
