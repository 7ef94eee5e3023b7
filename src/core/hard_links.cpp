#include "precdetect/core/hard_links.h"

namespace precdetect {
namespace fs = std::filesystem;
namespace {

/// Entries walked at most, as the inventory's bound: past them, names are not counted (so count as outside).
constexpr uint64_t kMaxWalked = 10'000'000;

}  // namespace

void HardLinkCensus::walk() {
  std::error_code ec;
  fs::recursive_directory_iterator it(folder_, fs::directory_options::skip_permission_denied, ec), end;
  uint64_t walked = 0;
  for (; !ec && it != end && ++walked <= kMaxWalked; it.increment(ec)) {
    struct stat status {};
    // lstat: a symbolic link is a name of its own, never of what it leads to.
    if (::lstat(it->path().c_str(), &status) == 0 && S_ISREG(status.st_mode) && status.st_nlink > 1)
      ++names_[{status.st_dev, status.st_ino}];
  }
}

uint64_t HardLinkCensus::names_beneath(const struct stat& status) {
  std::call_once(walked_, [this] { walk(); });
  auto found = names_.find({status.st_dev, status.st_ino});
  return found == names_.end() ? 0 : found->second;
}

bool has_names_outside(HardLinkCensus& census, const struct stat& status) {
  return S_ISREG(status.st_mode) && status.st_nlink > 1 && census.names_beneath(status) < status.st_nlink;
}

}  // namespace precdetect
