#include "precdetect/report/stat_text.h"

#include <fmt/format.h>

#include <cmath>

namespace precdetect {

std::string format_stat(bool present, double value) {
  if (!present) return "-";
  if (std::isinf(value)) return "inf";
  return fmt::format("{:.3e}", value);
}

std::string elide_middle(const std::string& text, size_t width) {
  if (text.size() <= width) return text;
  size_t keep = width - 3;
  return text.substr(0, keep / 2) + "..." + text.substr(text.size() - (keep - keep / 2));
}

}  // namespace precdetect
