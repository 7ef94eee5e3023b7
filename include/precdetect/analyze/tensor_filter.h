#pragma once
/// Which tensors a run looks at, by name (--include / --exclude).

#include <optional>
#include <regex>
#include <string>

namespace precdetect {

struct TensorFilter {
  std::optional<std::regex> include;
  std::optional<std::regex> exclude;
  /// True when `name` matches --include (if any) and not --exclude (if any); regex_search semantics.
  bool selects(const std::string& name) const;
  /// True when --include or --exclude was given.
  bool given() const { return include || exclude; }
};

}  // namespace precdetect
