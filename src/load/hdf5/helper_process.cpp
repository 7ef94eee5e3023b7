#include "precdetect/load/hdf5/helper_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "precdetect/core/whole_number.h"

extern char** environ;

namespace precdetect {
namespace {

/// A pipe's two ends, closed when they go.
struct Pipe {
  int read = -1, write = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) == 0) read = fds[0], write = fds[1];
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  ~Pipe() { close_read(), close_write(); }
  void close_read() { close_end(read); }
  void close_write() { close_end(write); }

 private:
  static void close_end(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

/// The named error a helper that exited 2 wrote (helper_error_line's "<code>\t<message>"); nullopt when its standard
/// error holds none: then it failed like any program.
std::optional<Error> named_error(std::string_view errors) {
  size_t tab = errors.find('\t');
  if (tab == std::string_view::npos) return std::nullopt;
  std::optional<int> code = whole_number<int>(errors.substr(0, tab));
  if (!code || *code < 0 || *code > static_cast<int>(ErrorCode::kInternal)) return std::nullopt;
  std::string_view message = errors.substr(tab + 1);
  while (message.ends_with('\n')) message.remove_suffix(1);
  return Error(static_cast<ErrorCode>(*code), std::string(message));
}

/// Reads the helper's output (into `into` when given, else `out`) and its standard error until both close or the
/// deadline passes; false on a timeout or an output that does not fit `into`.
bool collect(int out_fd, int err_fd, std::string& out, std::string& err, std::span<std::byte> into,
             std::chrono::steady_clock::time_point deadline, bool& overflow) {
  size_t filled = 0;
  std::array<char, 1 << 16> buffer{};
  std::array<pollfd, 2> fds = {pollfd{.fd = out_fd, .events = POLLIN, .revents = 0},
                               pollfd{.fd = err_fd, .events = POLLIN, .revents = 0}};
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    int ready = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      bool to_dest = i == 0 && !into.empty();
      char* target = to_dest ? reinterpret_cast<char*>(into.data() + filled) : buffer.data();
      size_t room = to_dest ? into.size() - filled : buffer.size();
      if (to_dest && room == 0) target = buffer.data(), room = buffer.size();  // more than fits: read to see
      ssize_t got = ::read(fds[i].fd, target, room);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        fds[i].fd = -1;
        continue;
      }
      if (to_dest && target != buffer.data())
        filled += static_cast<size_t>(got);
      else if (to_dest)
        overflow = true;
      else
        (i == 0 ? out : err).append(target, static_cast<size_t>(got));
    }
  }
  if (!into.empty() && filled != into.size()) overflow = true;
  return true;
}

std::string describe(int status) {
  if (WIFSIGNALED(status)) return fmt::format("crashed (signal {}: {})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return fmt::format("exited with status {}", WEXITSTATUS(status));
}

}  // namespace

std::filesystem::path helper_path(std::string_view name) {
  if (const char* folder = std::getenv("PRECDETECT_HELPERS"); folder && *folder)
    return std::filesystem::path(folder) / name;
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && std::filesystem::exists(self.parent_path() / name, ec)) return self.parent_path() / name;
  return std::filesystem::path(PRECDETECT_HELPER_DIR) / name;
}

std::string helper_error_line(const Error& error) {
  return fmt::format("{}\t{}", static_cast<int>(error.code()), error.what());
}

std::string run_helper(const std::filesystem::path& program, const std::vector<std::string>& args, ErrorCode code,
                       const std::filesystem::path& path, std::string_view what, std::chrono::seconds limit,
                       std::span<std::byte> into) {
  Pipe out, err;
  if (out.read < 0 || err.read < 0) fail(ErrorCode::kIo, path, fmt::format("cannot start {}: pipe", what));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out.write, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.write, STDERR_FILENO);
  std::vector<std::string> argv_text = {program.string()};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(argv_text.size() + 1);
  for (std::string& arg : argv_text) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int spawned = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  out.close_write(), err.close_write();
  if (spawned != 0)
    fail(code, path, fmt::format("cannot start {}: {}: {}", what, program.string(), std::strerror(spawned)));
  std::string output, errors;
  bool overflow = false;
  bool finished = collect(out.read, err.read, output, errors, into, std::chrono::steady_clock::now() + limit, overflow);
  if (!finished) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!finished) fail(code, path, fmt::format("{} did not finish in {} s (stopped)", what, limit.count()));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
    if (std::optional<Error> named = named_error(errors)) throw *named;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail(code, path, fmt::format("{} {}", what, describe(status)));
  if (overflow) fail(code, path, fmt::format("{} wrote other than the {} bytes expected", what, into.size()));
  return output;
}

}  // namespace precdetect
