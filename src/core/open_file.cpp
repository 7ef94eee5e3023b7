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

namespace {

// Without pipes, O_NONBLOCK: opening a FIFO then returns at once, to be refused below. (It does not change reads
// from regular files.) A pipe that is welcome is opened as usual and waits for its writer.
int open_flags(bool allow_pipe) { return O_RDONLY | O_CLOEXEC | (allow_pipe ? 0 : O_NONBLOCK); }

}  // namespace

/// `fd` as open returned it for `path`: refused unless it is a regular file (or a welcome pipe).
OpenFile checked_open(int fd, const std::filesystem::path& path, std::string_view what, bool allow_pipe) {
  OpenFile file(fd);
  if (file.fd() < 0)
    fail(errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo, path,
         fmt::format("cannot open {}: {}", what, std::strerror(errno)));
  if (::fstat(file.fd(), &file.status_) != 0)
    fail(ErrorCode::kIo, path, fmt::format("cannot stat {}: {}", what, std::strerror(errno)));
  if (!S_ISREG(file.status_.st_mode) && !(allow_pipe && S_ISFIFO(file.status_.st_mode)))
    fail(ErrorCode::kIo, path, fmt::format("{} is not a regular file", what));
  return file;
}

OpenFile open_for_reading(const std::filesystem::path& path, std::string_view what, bool allow_pipe) {
  const ModelRoot* root = confinement();
  if (!root)
    fail(ErrorCode::kInternal, path,
         fmt::format("{} opened outside any model's confinement (core/confinement.h)", what));
  int flags = open_flags(allow_pipe);
  if (path == root->entry) return checked_open(::open(path.c_str(), flags), path, what, allow_pipe);
  OpenFile file = checked_open(open_beneath(*root, path, flags), path, what, allow_pipe);
  if (has_names_outside(*root, file.status()))
    fail(ErrorCode::kPathEscape, path,
         fmt::format("{} is a hard link of {} names, {} of them beneath the model's folder {}: its other names lie "
                     "outside it; not read",
                     what, file.status().st_nlink, root->census->names_beneath(file.status()), root->folder.string()));
  return file;
}

OpenFile open_user_file(const std::filesystem::path& path, std::string_view what, bool allow_pipe) {
  return checked_open(::open(path.c_str(), open_flags(allow_pipe)), path, what, allow_pipe);
}

}  // namespace precdetect
