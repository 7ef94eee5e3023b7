#pragma once
/// Names that mark a tensor as a buffer (model state that is not learned) where the file does not say: state
/// dicts and safetensors keep BatchNorm statistics, attention masks and rotary tables beside the parameters.
/// The list lives in the rules file (`buffers`, docs/rules.md), so a user can extend it.

#include <regex>
#include <string>
#include <vector>

namespace precdetect {

struct BufferPattern {
  std::string pattern;  ///< ECMAScript regex, searched in the tensor's name
  std::string why;      ///< which architectures register such a buffer
  std::regex regex;     ///< `pattern`, compiled
};

struct BufferNames {
  std::vector<BufferPattern> patterns;
  /// True when a pattern matches somewhere in `name` (regex_search).
  bool matches(const std::string& name) const;
};

}  // namespace precdetect
