#include "precdetect/analyze/narrow_rounding.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace precdetect {
namespace {

/// `x` rounded to nearest even in a binary format of `mantissa_bits` stored bits whose normals start at
/// 2^min_exponent, overflowing past `max` to infinity.
double round_to_format(double x, int mantissa_bits, int min_exponent, double max) {
  if (!std::isfinite(x) || x == 0) return x;
  int exponent = 0;
  std::frexp(x, &exponent);  // |x| in [2^(exponent-1), 2^exponent)
  double ulp = std::ldexp(1.0, std::max(exponent - 1, min_exponent) - mantissa_bits);
  double rounded = std::nearbyint(x / ulp) * ulp;
  return std::fabs(rounded) > max ? std::copysign(HUGE_VAL, x) : rounded;
}

}  // namespace

double rounded_to(DType dtype, double x) {
  switch (dtype) {
    case DType::F16:
      return round_to_format(x, 10, -14, 65504.0);
    case DType::BF16:
      return round_to_format(x, 7, -126, std::ldexp(255.0, 120));
    default:
      return static_cast<float>(x);
  }
}

}  // namespace precdetect
