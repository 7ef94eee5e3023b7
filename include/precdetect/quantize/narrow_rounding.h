#pragma once
/// Rounding to the narrow float formats the dequantizing kernels compute in: what a product or sum formed in a
/// scale's dtype (float16, bfloat16, float32) holds.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "precdetect/core/dtype.h"
#include "precdetect/kernel/float_vectors.h"

namespace precdetect {

/// `x` as the nearest value of `dtype` (F32, F16 or BF16; any other dtype: float32), ties to even, overflowing to
/// infinity. Exact as one operation's rounding when `x` is an exact product or sum of values of that dtype: double
/// holds more than twice their precision plus two.
double rounded_to(DType dtype, double x);

/// float32 to float16 bits as torch casts a float32 tensor, rounding to nearest even, overflowing to infinity, NaN
/// kept: the FP16 library's fp16_ieee_from_fp32_value, which c10::Half uses (two float products move the rounding
/// point to the half's, the sum rounds there). Bit operations rather than rounded_to's arithmetic, inline: the
/// dequantizing loops fill every block's table with them.
inline uint16_t half_bits(float f) {
  float base = (std::fabs(f) * 0x1.0p+112F) * 0x1.0p-110F;
  const auto w = std::bit_cast<uint32_t>(f);
  const uint32_t shl1_w = w + w, sign = w & 0x80000000U;
  uint32_t bias = std::max(shl1_w & 0xFF000000U, 0x71000000U);
  base = std::bit_cast<float>((bias >> 1) + 0x07800000U) + base;
  const auto bits = std::bit_cast<uint32_t>(base);
  const uint32_t nonsign = ((bits >> 13) & 0x00007C00U) + (bits & 0x00000FFFU);
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000U ? 0x7E00U : nonsign));
}

/// float32 to bfloat16 bits, to nearest even, NaN as 0x7FC0: c10::BFloat16's round_to_nearest_even.
inline uint16_t bfloat16_bits(float f) {
  const auto bits = std::bit_cast<uint32_t>(f);
  const auto rounded = static_cast<uint16_t>((bits + 0x7FFFU + ((bits >> 16) & 1U)) >> 16);
  return std::isnan(f) ? uint16_t{0x7FC0} : rounded;
}

/// The value type a table of dequantized values holds for the kernel: the 16-bit patterns of an F16 or BF16 result,
/// read by the kernel of that dtype (half the bytes of float32), else float32 itself.
template <DType kResult>
using NarrowValue = std::conditional_t<kResult == DType::F16 || kResult == DType::BF16, uint16_t, float>;

/// `x` as the table value of a `kResult` result (NarrowValue).
template <DType kResult>
NarrowValue<kResult> narrow_value(float x) {
  if constexpr (kResult == DType::F16)
    return half_bits(x);
  else if constexpr (kResult == DType::BF16)
    return bfloat16_bits(x);
  else
    return x;
}

/// half_bits of four floats at once, in the low halves of the words.
inline vectors::Words half_bits(vectors::Floats f) {
  using vectors::Words;
  vectors::Floats base = (vectors::magnitudes(f) * 0x1.0p+112F) * 0x1.0p-110F;
  const auto w = std::bit_cast<Words>(f);
  const Words shl1_w = w + w, sign = w & 0x80000000U, exponent = shl1_w & 0xFF000000U;
  const Words bias = exponent > 0x71000000U ? exponent : Words{} + 0x71000000U;
  base = std::bit_cast<vectors::Floats>((bias >> 1) + 0x07800000U) + base;
  const auto bits = std::bit_cast<Words>(base);
  const Words nonsign = ((bits >> 13) & 0x00007C00U) + (bits & 0x00000FFFU);
  return (sign >> 16) | (shl1_w > 0xFF000000U ? Words{} + 0x7E00U : nonsign);
}

/// bfloat16_bits of four floats at once, in the low halves of the words.
inline vectors::Words bfloat16_bits(vectors::Floats f) {
  const auto bits = std::bit_cast<vectors::Words>(f);
  const vectors::Words rounded = (bits + 0x7FFFU + ((bits >> 16) & 1U)) >> 16;
  return (bits & 0x7FFFFFFFU) > 0x7F800000U ? vectors::Words{} + 0x7FC0U : rounded;  // NaN
}

/// round_in_place without the CPU's conversions: four at a time by bit operations.
template <DType kResult>
void round_in_place_by_bits(float* values, size_t count) {
  if constexpr (kResult == DType::F16 || kResult == DType::BF16) {
    size_t i = 0;
    for (; i + vectors::kWidth <= count; i += vectors::kWidth) {
      vectors::Floats four;
      std::memcpy(&four, values + i, sizeof(four));
      const vectors::Words sign = std::bit_cast<vectors::Words>(four) & 0x80000000U;
      const vectors::Floats magnitude = kResult == DType::F16
                                            ? vectors::f16_magnitudes(half_bits(four))
                                            : std::bit_cast<vectors::Floats>((bfloat16_bits(four) & 0x7FFFU) << 16);
      four = std::bit_cast<vectors::Floats>(std::bit_cast<vectors::Words>(magnitude) | sign);
      std::memcpy(values + i, &four, sizeof(four));
    }
    for (; i < count; ++i) values[i] = static_cast<float>(rounded_to(kResult, values[i]));
  }
}

/// narrow_magnitudes without the CPU's conversions: four at a time by bit operations.
template <DType kResult>
void narrow_magnitudes_by_bits(const float* values, size_t count, NarrowValue<kResult>* out) {
  size_t i = 0;
  if constexpr (kResult == DType::F16 || kResult == DType::BF16) {
    for (; i + vectors::kWidth <= count; i += vectors::kWidth) {
      vectors::Floats four;
      std::memcpy(&four, values + i, sizeof(four));
      const vectors::Words bits = (kResult == DType::F16 ? half_bits(four) : bfloat16_bits(four)) & 0x7FFFU;
      const auto narrow = __builtin_convertvector(bits, vectors::HalfWords);
      std::memcpy(out + i, &narrow, sizeof(narrow));
    }
    for (; i < count; ++i) out[i] = narrow_value<kResult>(values[i]) & 0x7FFFU;
  } else {
    for (; i < count; ++i) out[i] = std::fabs(values[i]);
  }
}

/// Asks the CPU (cpuid): whether it converts float32 to float16 itself (x86-64's F16C, whose VEX encoding the
/// operating system must enable with AVX's registers: every x86-64 CPU since 2013).
bool cpu_has_half_conversions();

/// cpu_has_half_conversions(), asked once: the program is built for any x86-64.
inline bool cpu_converts_halves() {
  static const bool converts = cpu_has_half_conversions();
  return converts;
}

/// half_bits of each of `count` floats without its sign bit (NaN as 0x7E00), by the CPU's conversion; only where
/// cpu_converts_halves().
void half_magnitudes_by_cpu(const float* values, size_t count, uint16_t* out);
/// Each of `count` floats rounded to float16 in place by the CPU's conversions; only where cpu_converts_halves().
void round_to_half_in_place_by_cpu(float* values, size_t count);

/// Each of `count` floats rounded to `kResult` (F16, BF16; F32 leaves them), in place: MLX's dequantization rounds
/// its product to the scales' dtype before adding the bias.
template <DType kResult>
void round_in_place(float* values, size_t count) {
  if (kResult == DType::F16 && cpu_converts_halves()) return round_to_half_in_place_by_cpu(values, count);
  round_in_place_by_bits<kResult>(values, count);
}

/// The magnitudes of `count` floats as a table of `kResult` values holds them: narrow_value of each without its sign
/// bit (no statistic looks at a sign; a 16-bit result's is then its magnitude code, below 2^15). The integer
/// formats' tables are filled for every row, group or block, as often as one entry per four values: by the CPU's
/// conversions where it has them (MLX's 4-bit scan 30% faster, docs/benchmarks.md), else four at a time by bits.
template <DType kResult>
void narrow_magnitudes(const float* values, size_t count, NarrowValue<kResult>* out) {
  if constexpr (kResult == DType::F16)
    if (cpu_converts_halves()) return half_magnitudes_by_cpu(values, count, out);
  narrow_magnitudes_by_bits<kResult>(values, count, out);
}

}  // namespace precdetect
