#include "precdetect/report/stat_text.h"

#include <fmt/format.h>

#include <cmath>

namespace precdetect {

std::string format_stat(bool present, double value) {
  if (!present) return "-";
  if (std::isinf(value)) return "inf";
  return fmt::format("{:.3e}", value);
}

}  // namespace precdetect
