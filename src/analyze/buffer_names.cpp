#include "precdetect/analyze/buffer_names.h"

#include <algorithm>

namespace precdetect {

bool BufferNames::matches(const std::string& name) const {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const BufferPattern& buffer) { return std::regex_search(name, buffer.regex); });
}

}  // namespace precdetect
