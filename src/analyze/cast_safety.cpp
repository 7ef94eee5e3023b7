#include "precdetect/analyze/cast_safety.h"

namespace precdetect {

FormatFit format_fit(const TensorStats& stats, const NarrowFormat& format) {
  return {.overflow = stats.*format.above,
          .underflow = stats.exponents.below(format.min_subnormal_exponent),
          .subnormal = stats.exponents.between(format.min_subnormal_exponent, format.min_normal_exponent)};
}

uint64_t square_overflow(const TensorStats& stats) { return stats.exponents.at_least(8); }

}  // namespace precdetect
