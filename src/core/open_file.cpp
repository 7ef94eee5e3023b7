#include "precdetect/core/open_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "precdetect/core/confinement.h"
#include "precdetect/core/error.h"

namespace precdetect {

OpenFile::~OpenFile() {
  if (fd_ >= 0) ::close(fd_);
}

OpenFile open_for_reading(const std::filesystem::path& path, std::string_view what, bool allow_pipe) {
  // Without pipes, O_NONBLOCK: opening a FIFO then returns at once, to be refused below. (It does not change
  // reads from regular files.) A pipe that is welcome is opened as usual and waits for its writer.
  int flags = O_RDONLY | O_CLOEXEC | (allow_pipe ? 0 : O_NONBLOCK);
  const ModelRoot* root = confinement();
  OpenFile file(root && path != root->entry ? open_beneath(*root, path, flags) : ::open(path.c_str(), flags));
  if (file.fd() < 0)
    fail(errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo, path,
         fmt::format("cannot open {}: {}", what, std::strerror(errno)));
  if (::fstat(file.fd(), &file.status_) != 0)
    fail(ErrorCode::kIo, path, fmt::format("cannot stat {}: {}", what, std::strerror(errno)));
  if (!S_ISREG(file.status_.st_mode) && !(allow_pipe && S_ISFIFO(file.status_.st_mode)))
    fail(ErrorCode::kIo, path, fmt::format("{} is not a regular file", what));
  return file;
}

}  // namespace precdetect
