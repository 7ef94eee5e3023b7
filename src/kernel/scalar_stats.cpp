#include "precdetect/kernel/scalar_stats.h"

#include <array>
#include <bit>
#include <stdexcept>

namespace precdetect {
namespace {

/// float32's exponent bin of a finite non-zero magnitude, from the float64 exponent field.
int exponent_bin(double magnitude) {
  int biased = static_cast<int>(std::bit_cast<uint64_t>(magnitude) >> 52);  // sign is clear
  return ExponentHistogram::bin_of_exponent(biased - 1023);
}

bool fp16_exact(float magnitude) {
  if (magnitude == std::numeric_limits<float>::infinity()) return true;
  if (magnitude > limits::kFp16Max) return false;
  if (magnitude >= 0x1p-14f) return (std::bit_cast<uint32_t>(magnitude) & 0x1FFF) == 0;  // 10 mantissa bits
  float scaled = magnitude * 0x1p24f;  // subnormals and zero: multiples of 2^-24 (exact scaling)
  return scaled == std::trunc(scaled);
}

/// 8-bit floats decode through a 128-entry table of magnitudes (sign bit masked off).
using Fp8Table = std::array<double, 128>;

Fp8Table make_fp8_table(int mantissa_bits, int bias, bool ieee_specials) {
  Fp8Table table{};
  for (int code = 0; code < 128; ++code) {
    int exponent = code >> mantissa_bits;
    int mantissa = code & ((1 << mantissa_bits) - 1);
    int max_exponent = (1 << (7 - mantissa_bits)) - 1;
    double fraction = static_cast<double>(mantissa) / (1 << mantissa_bits);
    table[code] = exponent == 0 ? std::ldexp(fraction, 1 - bias) : std::ldexp(1.0 + fraction, exponent - bias);
    if (ieee_specials && exponent == max_exponent)  // E5M2: IEEE-style Inf and NaN
      table[code] = mantissa == 0 ? INFINITY : NAN;
  }
  if (!ieee_specials) table[127] = NAN;  // E4M3 "fn": no Inf, only S.1111.111 is NaN
  return table;
}

double f16_magnitude(uint32_t code) {
  int exponent = static_cast<int>(code >> 10), mantissa = static_cast<int>(code & 0x3FF);
  if (exponent == 0x1F) return mantissa == 0 ? INFINITY : NAN;
  return exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
}

}  // namespace

void add_magnitude(TensorStats& stats, double magnitude, uint64_t count) {
  stats.numel += count;
  if (std::isnan(magnitude)) {
    stats.nans += count;
    return;
  }
  stats.abs_min = std::fmin(stats.abs_min, magnitude);
  stats.abs_max = std::fmax(stats.abs_max, magnitude);
  stats.sum_squares += magnitude * magnitude * static_cast<double>(count);
  if (magnitude == 0) {
    stats.zeros += count;
  } else if (std::isinf(magnitude)) {
    stats.infs += count;
  } else {
    stats.exponents.counts[exponent_bin(magnitude)] += count;
    stats.above_1e2 += magnitude > limits::kSeedThreshold ? count : 0;
    stats.above_e4m3_max += magnitude > limits::kE4m3Max ? count : 0;
    stats.above_e5m2_max += magnitude > limits::kE5m2Max ? count : 0;
    stats.above_fp16_max += magnitude > limits::kFp16Max ? count : 0;
  }
}

void add_wide_magnitude(TensorStats& stats, double magnitude) {
  add_magnitude(stats, magnitude);
  if (std::isnan(magnitude)) return;
  ++stats.exactness_checked;
  auto narrow = static_cast<float>(magnitude);
  if (static_cast<double>(narrow) != magnitude) return;                 // not even a float32
  stats.bf16_exact += (std::bit_cast<uint32_t>(narrow) & 0xFFFF) == 0;  // bf16 is float32's upper half
  stats.fp16_exact += fp16_exact(narrow);
}

uint32_t magnitude_code_count(DType dtype) {
  switch (dtype) {
    case DType::F16:
    case DType::BF16:
      return 1u << 15;
    case DType::F8_E4M3:
    case DType::F8_E5M2:
      return 1u << 7;
    default:
      throw std::invalid_argument("magnitude_code_count: not an 8- or 16-bit float dtype");
  }
}

double code_magnitude(DType dtype, uint32_t code) {
  static const Fp8Table e4m3 = make_fp8_table(3, 7, false), e5m2 = make_fp8_table(2, 15, true);
  switch (dtype) {
    case DType::BF16:
      return std::bit_cast<float>(code << 16);
    case DType::F16:
      return f16_magnitude(code);
    case DType::F8_E4M3:
      return e4m3[code];
    case DType::F8_E5M2:
      return e5m2[code];
    default:
      throw std::invalid_argument("code_magnitude: not an 8- or 16-bit float dtype");
  }
}

template <typename Count>
TensorStats stats_from_code_counts(DType dtype, const Count* counts) {
  TensorStats stats;
  uint32_t codes = magnitude_code_count(dtype);
  // Codes ascend with magnitude (NaNs last), so the squares are summed smallest first.
  for (uint32_t code = 0; code < codes; ++code)
    if (counts[code] != 0) add_magnitude(stats, code_magnitude(dtype, code), static_cast<uint64_t>(counts[code]));
  return stats;
}

template TensorStats stats_from_code_counts(DType, const uint32_t*);
template TensorStats stats_from_code_counts(DType, const uint64_t*);
template TensorStats stats_from_code_counts(DType, const double*);

}  // namespace precdetect
