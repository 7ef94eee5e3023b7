#pragma once
/// Hard links: a regular file of several names is one file, reached by each name alike. When one of its names lies
/// outside a model's root, its bytes are as much a file outside the model as inside (a hard link to a file
/// elsewhere, made by `ln`, by an extraction that honours a tar's hard-link member, by a tool that deduplicates),
/// so reading it would report numbers about a file the model's author chose elsewhere on the machine.
///
/// The rule: a file opened for a model must have all its names (st_nlink) beneath the model's root, found by a walk
/// of the root; otherwise it is a link out, never read. onnx refuses any external-data file of more than one name
/// (checker.cc's hard_link_count > 1, onnx/onnx#7717, CVE-2026-34446); counting the names inside instead keeps a
/// folder that holds one file under two names (a deduplicated copy, `model.bin` beside `pytorch_model.bin`) readable,
/// and refuses exactly what could hold bytes from outside. A name that the walk cannot see (an unreadable folder,
/// past its bound) counts as outside.

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace precdetect {

/// How many names each file of several names has beneath a folder: walked once, when first asked, and shared by
/// every copy of the root that holds it (a model's files are opened from several threads).
class HardLinkCensus {
 public:
  explicit HardLinkCensus(std::filesystem::path folder) : folder_(std::move(folder)) {}

  /// How many of the names of the file `status` describes lie beneath the folder (0 for one the walk did not meet).
  uint64_t names_beneath(const struct stat& status);

 private:
  void walk();

  std::filesystem::path folder_;
  std::once_flag walked_;
  std::map<std::pair<dev_t, ino_t>, uint64_t> names_;  ///< files of several names only
};

/// True when `status` (a regular file's) has a name outside the census's folder: its link count is above the names
/// found beneath it. A file of one name is never counted (no walk happens).
bool has_names_outside(HardLinkCensus& census, const struct stat& status);

}  // namespace precdetect
