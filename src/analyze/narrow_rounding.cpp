#include "precdetect/analyze/narrow_rounding.h"

#include <algorithm>
#include <bit>
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

/// float32 to float16 bits, rounding to nearest even: the FP16 library's fp16_ieee_from_fp32_value, which c10::Half
/// uses (two float products move the rounding point to the half's, the sum rounds there).
uint16_t half_bits(float f) {
  float base = (std::fabs(f) * 0x1.0p+112F) * 0x1.0p-110F;
  const auto w = std::bit_cast<uint32_t>(f);
  const uint32_t shl1_w = w + w, sign = w & 0x80000000U;
  uint32_t bias = std::max(shl1_w & 0xFF000000U, 0x71000000U);
  base = std::bit_cast<float>((bias >> 1) + 0x07800000U) + base;
  const auto bits = std::bit_cast<uint32_t>(base);
  const uint32_t nonsign = ((bits >> 13) & 0x00007C00U) + (bits & 0x00000FFFU);
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000U ? 0x7E00U : nonsign));
}

/// float32 rounded to bfloat16's 8 significant bits, to nearest even (c10::BFloat16's round_to_nearest_even).
float bfloat16_of(float f) {
  if (std::isnan(f)) return f;
  auto bits = std::bit_cast<uint32_t>(f);
  bits += 0x7FFFU + ((bits >> 16) & 1U);
  return std::bit_cast<float>(bits & 0xFFFF0000U);
}

}  // namespace

uint16_t narrow_bits(DType dtype, float x) {
  return dtype == DType::F16 ? half_bits(x) : static_cast<uint16_t>(std::bit_cast<uint32_t>(bfloat16_of(x)) >> 16);
}

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
