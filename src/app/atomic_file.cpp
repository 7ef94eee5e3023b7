#include "precdetect/app/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "precdetect/core/error.h"

namespace precdetect {
namespace {

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
  explicit TempFileGuard(const std::filesystem::path& temp) {
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

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  std::filesystem::path temp = path;
  temp += fmt::format(".tmp-{}", ::getpid());
  TempFileGuard guard(temp);
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
