#include "precdetect/core/output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <iterator>
#include <optional>

#include "precdetect/core/error.h"
#include "precdetect/core/whole_number.h"

namespace precdetect {
namespace fs = std::filesystem;
namespace {

constexpr int kMaxLinks = 40;  // the kernel's own bound before ELOOP

constexpr std::array kFatalSignals = {SIGINT, SIGTERM, SIGHUP};

/// The temporary file being written, for the signal handler (one output file is written at a time).
char g_temp_path[4096];
volatile std::sig_atomic_t g_writing = 0;

extern "C" void remove_temp_file_and_die(int signal) {
  if (g_writing) ::unlink(g_temp_path);  // async-signal-safe
  std::signal(signal, SIG_DFL);
  std::raise(signal);  // die of the signal as the user asked, with the shell seeing why
}

/// While it lives, Ctrl-C or a kill removes the temporary file before the process dies: no partial file is ever
/// left beside the output, whichever thread the signal lands on.
class TempFileGuard {
 public:
  explicit TempFileGuard(const fs::path& temp) {
    if (temp.native().size() >= sizeof(g_temp_path)) return;  // too long to hand over: unguarded, still atomic
    std::memcpy(g_temp_path, temp.c_str(), temp.native().size() + 1);
    struct sigaction action {};
    action.sa_handler = remove_temp_file_and_die;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < kFatalSignals.size(); ++i) ::sigaction(kFatalSignals[i], &action, &previous_[i]);
    g_writing = 1;
    guarding_ = true;
  }
  ~TempFileGuard() {
    if (!guarding_) return;
    g_writing = 0;
    for (size_t i = 0; i < kFatalSignals.size(); ++i) ::sigaction(kFatalSignals[i], &previous_[i], nullptr);
  }
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;

 private:
  std::array<struct sigaction, kFatalSignals.size()> previous_{};
  bool guarding_ = false;
};

[[noreturn]] void cannot_write(const fs::path& given, const fs::path& written, int error) {
  std::string what = written == given ? "" : fmt::format(" {}", written.string());
  fail(ErrorCode::kIo, given, fmt::format("cannot write{}: {}", what, std::strerror(error)));
}

bool under_proc(const fs::path& real) {
  if (!real.is_absolute()) return false;
  auto part = std::next(real.begin());  // past the root
  return part != real.end() && *part == "proc";
}

/// N when `real_folder`/`name` is /proc/<this process>/fd/N (what /dev/stdout, /dev/fd/N and /proc/self/fd/N lead
/// to): written through the descriptor itself, so that a redirection's offset and O_APPEND hold.
std::optional<int> own_descriptor(const fs::path& real_folder, const fs::path& name) {
  if (real_folder != fs::path("/proc") / std::to_string(::getpid()) / "fd") return std::nullopt;
  return whole_number<int>(name.native());
}

/// Writes all of `content` to `fd`; false with errno set when a write fails.
bool write_all(int fd, std::string_view content) {
  size_t written = 0;
  while (written < content.size()) {
    ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) {
      errno = EIO;
      return false;
    }
    written += static_cast<size_t>(n);
  }
  return true;
}

/// `flags`: O_APPEND | O_CREAT to add to a file (append_output_file), none to write a device or FIFO.
void write_in_place(const fs::path& path, std::string_view content, int flags = 0) {
  int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | flags, 0644);  // a FIFO waits here for its reader
  if (fd < 0) cannot_write(path, path, errno);
  bool ok = write_all(fd, content);
  int error = errno;
  if (::close(fd) != 0 && ok) cannot_write(path, path, errno);
  if (!ok) cannot_write(path, path, error);
}

void replace_file(const fs::path& given, const fs::path& file, std::string_view content) {
  fs::path temp = file;
  temp += fmt::format(".tmp-{}", ::getpid());
  TempFileGuard guard(temp);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) cannot_write(given, file, errno);
  struct stat existing {};
  bool ok = (::stat(file.c_str(), &existing) != 0 || ::fchmod(fd, existing.st_mode & 07777) == 0) &&
            write_all(fd, content) && ::fsync(fd) == 0;
  int error = errno;
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(temp.c_str(), file.c_str()) != 0) {
    error = ok ? errno : error;
    ::unlink(temp.c_str());
    cannot_write(given, file, error);
  }
}

}  // namespace

OutputTarget resolve_output_target(const fs::path& path) {
  fs::path current = path;
  for (int link = 0; link <= kMaxLinks; ++link) {
    std::error_code ec;
    fs::path folder = fs::canonical(current.has_parent_path() ? current.parent_path() : fs::path("."), ec);
    if (ec) cannot_write(path, current.parent_path(), ec.value());
    fs::path name = current.filename();
    if (auto descriptor = own_descriptor(folder, name))
      return {.kind = OutputTarget::Kind::kDescriptor, .path = path, .descriptor = *descriptor};
    fs::path real = folder / name;
    if (under_proc(real)) return {.kind = OutputTarget::Kind::kInPlace, .path = path};
    struct stat status {};
    if (::lstat(real.c_str(), &status) != 0) {
      if (errno == ENOENT) return {.kind = OutputTarget::Kind::kFile, .path = real};
      cannot_write(path, real, errno);
    }
    if (S_ISREG(status.st_mode)) return {.kind = OutputTarget::Kind::kFile, .path = real};
    if (S_ISDIR(status.st_mode)) cannot_write(path, real, EISDIR);
    if (!S_ISLNK(status.st_mode)) return {.kind = OutputTarget::Kind::kInPlace, .path = path};
    fs::path target = fs::read_symlink(real, ec);
    if (ec) cannot_write(path, real, ec.value());
    current = target.is_absolute() ? target : folder / target;
  }
  cannot_write(path, path, ELOOP);
}

void write_output_file(const fs::path& path, std::string_view content) {
  OutputTarget target = resolve_output_target(path);
  switch (target.kind) {
    case OutputTarget::Kind::kFile:
      return replace_file(path, target.path, content);
    case OutputTarget::Kind::kInPlace:
      return write_in_place(path, content);
    case OutputTarget::Kind::kDescriptor:
      if (!write_all(target.descriptor, content)) cannot_write(path, path, errno);
      return;
  }
}

void append_output_file(const fs::path& path, std::string_view content) {
  write_in_place(path, content, O_APPEND | O_CREAT);
}

}  // namespace precdetect
