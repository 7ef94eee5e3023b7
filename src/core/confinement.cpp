#include "precdetect/core/confinement.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <deque>
#include <vector>

#include "precdetect/core/error.h"

namespace fs = std::filesystem;

namespace precdetect {
namespace {

thread_local const ModelRoot* current_root = nullptr;
std::atomic<bool> openat2_enabled{true};
constexpr int kMaxLinks = 40;  // as the kernel's MAXSYMLINKS

/// A descriptor closed when it goes.
struct Descriptor {
  int fd;
  explicit Descriptor(int value) : fd(value) {}
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
};

bool is_noise(const fs::path& part) { return part.empty() || part == "."; }

/// What follows `prefix` in `path`, component by component ("." and empty components aside); nullopt when
/// `prefix` is not a prefix of `path`. The rest is kept as spelled: its ".." are the kernel's to resolve.
std::optional<fs::path> rest_after(const fs::path& prefix, const fs::path& path) {
  if (prefix.is_absolute() != path.is_absolute()) return std::nullopt;
  auto p = path.begin();
  for (const fs::path& part : prefix) {
    if (is_noise(part)) continue;
    while (p != path.end() && is_noise(*p)) ++p;
    if (p == path.end() || *p != part) return std::nullopt;
    ++p;
  }
  fs::path rest;
  for (; p != path.end(); ++p)
    if (!is_noise(*p)) rest /= *p;
  return rest;
}

/// `path` relative to the root's folder, or nullopt when it is spelled outside the model's folder.
std::optional<fs::path> relative_to_root(const ModelRoot& root, const fs::path& path) {
  if (std::optional<fs::path> rest = rest_after(root.spelled, path))
    return root.base.lexically_relative(root.folder) / *rest;
  if (path.is_absolute()) return rest_after(root.folder, path);
  return std::nullopt;
}

std::deque<std::string> parts_of(const fs::path& path) {
  std::deque<std::string> parts;
  for (const fs::path& part : path) parts.push_back(part.string());
  return parts;
}

fs::path joined(const std::vector<std::string>& parts) {
  fs::path path;
  for (const std::string& part : parts) path /= part;
  return path;
}

std::string read_link(int root_fd, const fs::path& link) {
  std::string target(PATH_MAX, '\0');
  ssize_t length = ::readlinkat(root_fd, link.c_str(), target.data(), target.size());
  target.resize(length < 0 ? 0 : static_cast<size_t>(length));
  return target;
}

/// A path resolved by hand beneath the root: its components (no link, no "..") or where it left the root.
struct Resolved {
  std::vector<std::string> parts;
  std::optional<EscapingLink> escape;
  int error = 0;  ///< errno of a component that could not be looked at (ENOENT, ELOOP)
};

/// Where a resolution stands above the root, after a ".." climbed out of it: the root's own folders lie on the way
/// back in. Those are real folders (the root is canonical), so the way back needs no look at anything outside.
class AboveRoot {
 public:
  explicit AboveRoot(const fs::path& folder) {
    for (const fs::path& part : folder.relative_path()) folders_.push_back(part.string());
  }
  bool outside() const { return levels_ > 0; }
  /// One level up; at the file system's root ".." stays there, as the kernel's does.
  void climb() { levels_ = std::min(levels_ + 1, folders_.size()); }
  /// One level down into `part`: false when it is not the way back to the root.
  bool descend(const std::string& part) {
    if (part != folders_[folders_.size() - levels_]) return false;
    --levels_;
    return true;
  }

 private:
  std::vector<std::string> folders_;
  size_t levels_ = 0;
};

/// Resolves `rest` beneath the root as the kernel would, reading each link instead of following it. A path that
/// climbs out of the root and comes straight back in (`../model/x`, a link written from its folder's parent) stays
/// inside: only what it reaches counts.
Resolved resolve_by_hand(const ModelRoot& root, int root_fd, const fs::path& spelled, const fs::path& rest) {
  Resolved out;
  std::deque<std::string> pending = parts_of(rest);
  EscapingLink last{.link = spelled, .target = spelled.string()};  // what climbs out: the last link, or the path
  AboveRoot above(root.folder);
  int links = 0;
  while (!pending.empty() && !out.error) {
    std::string part = std::move(pending.front());
    pending.pop_front();
    if (part.empty() || part == ".") continue;
    if (part == ".." && out.parts.empty()) {
      above.climb();
      continue;
    }
    if (above.outside()) {
      if (!above.descend(part)) return out.escape = last, out;
      continue;
    }
    if (part == "..") {
      out.parts.pop_back();
      continue;
    }
    fs::path candidate = joined(out.parts) / part;
    struct stat status {};
    if (::fstatat(root_fd, candidate.c_str(), &status, AT_SYMLINK_NOFOLLOW) != 0) {
      out.error = errno;
      break;
    }
    if (!S_ISLNK(status.st_mode)) {
      out.parts.push_back(std::move(part));
      continue;
    }
    if (++links > kMaxLinks) return out.error = ELOOP, out;
    fs::path target = read_link(root_fd, candidate);
    last = {.link = root.folder / candidate, .target = target.string()};
    if (target.is_absolute()) {
      std::optional<fs::path> inside = rest_after(root.folder, target);
      if (!inside) return out.escape = last, out;
      out.parts.clear();
      target = *inside;
    }
    std::deque<std::string> more = parts_of(target);
    pending.insert(pending.begin(), more.begin(), more.end());
  }
  if (above.outside()) out.escape = last;  // it ends above the root: a folder that holds the model
  return out;
}

/// Opens a resolved path one component at a time, none followed if it became a link since it was resolved.
int open_components(int root_fd, const std::vector<std::string>& parts, int flags) {
  if (parts.empty()) return ::openat(root_fd, ".", flags);
  Descriptor folder(::fcntl(root_fd, F_DUPFD_CLOEXEC, 0));
  for (size_t i = 0; i + 1 < parts.size() && folder.fd >= 0; ++i) {
    int next = ::openat(folder.fd, parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int saved = errno;
    ::close(folder.fd);
    folder.fd = next;
    errno = saved;
  }
  return folder.fd < 0 ? -1 : ::openat(folder.fd, parts.back().c_str(), flags | O_NOFOLLOW);
}

int openat2_beneath(int root_fd, const fs::path& rest, int flags) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(::syscall(SYS_openat2, root_fd, rest.empty() ? "." : rest.c_str(), &how, sizeof how));
}

[[noreturn]] void fail_escape(const fs::path& path, const EscapingLink& escape, const ModelRoot& root) {
  std::string how = escape.link == path && escape.target == path.string()
                        ? "it"
                        : fmt::format("link {} -> {}", escape.link.string(), escape.target);
  fail(ErrorCode::kPathEscape, path,
       fmt::format("resolves outside the model's folder {} ({}); not opened", root.folder.string(), how));
}

}  // namespace

ModelRoot model_root_of(const fs::path& typed, bool is_folder) {
  fs::path spelled = is_folder ? typed : (typed.has_parent_path() ? typed.parent_path() : fs::path("."));
  std::error_code ec;
  fs::path base = fs::canonical(spelled, ec);
  if (ec) fail(ErrorCode::kIo, spelled, fmt::format("cannot resolve the model's folder: {}", ec.message()));
  ModelRoot root{.folder = base, .base = base, .spelled = spelled, .entry = is_folder ? fs::path() : typed};
  fs::path snapshots = base.parent_path();
  std::string repository = snapshots.parent_path().filename().string();
  if (snapshots.filename() == "snapshots" &&
      (repository.starts_with("models--") || repository.starts_with("datasets--") ||
       repository.starts_with("spaces--")))
    root.folder = snapshots.parent_path();
  root.census = std::make_shared<HardLinkCensus>(root.folder);
  return root;
}

bool has_names_outside(const ModelRoot& root, const struct stat& status) {
  return root.census && has_names_outside(*root.census, status);
}

std::optional<EscapingLink> escape_of(const ModelRoot& root, const fs::path& path) {
  std::optional<fs::path> rest = relative_to_root(root, path);
  if (!rest) return EscapingLink{.link = path, .target = path.string()};
  Descriptor root_fd(::open(root.folder.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root_fd.fd < 0) return std::nullopt;  // the root is gone: the open that follows names it
  return resolve_by_hand(root, root_fd.fd, path, *rest).escape;
}

int open_beneath(const ModelRoot& root, const fs::path& path, int flags) {
  flags |= O_RDONLY | O_CLOEXEC;
  std::optional<fs::path> rest = relative_to_root(root, path);
  if (!rest) fail_escape(path, {.link = path, .target = path.string()}, root);
  Descriptor root_fd(::open(root.folder.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root_fd.fd < 0) return -1;
  if (openat2_enabled) {
    int fd = openat2_beneath(root_fd.fd, *rest, flags);
    // EXDEV: it left the root, or took an absolute link that leads back inside (resolved by hand below); ENOSYS,
    // EPERM (a seccomp filter), E2BIG: a kernel without openat2.
    if (fd >= 0 || (errno != EXDEV && errno != ENOSYS && errno != EPERM && errno != E2BIG)) return fd;
  }
  Resolved resolved = resolve_by_hand(root, root_fd.fd, path, *rest);
  if (resolved.escape) fail_escape(path, *resolved.escape, root);
  if (resolved.error) return errno = resolved.error, -1;
  return open_components(root_fd.fd, resolved.parts, flags);
}

void use_openat2_for_tests(bool enabled) { openat2_enabled = enabled; }

Confined::Confined(const ModelRoot& root) : previous_(current_root) {
  if (!root.folder.empty()) current_root = &root;  // an empty root never lifts an enclosing confinement
}

Confined::~Confined() { current_root = previous_; }

const ModelRoot* confinement() { return current_root; }

}  // namespace precdetect
