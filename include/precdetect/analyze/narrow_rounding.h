#pragma once
/// Rounding to the narrow float formats the dequantizing kernels compute in: what a product or sum formed in a
/// scale's dtype (float16, bfloat16, float32) holds.

#include <cstdint>
#include <type_traits>

#include "precdetect/core/dtype.h"

namespace precdetect {

/// `x` as the nearest value of `dtype` (F32, F16 or BF16; any other dtype: float32), ties to even, overflowing to
/// infinity. Exact as one operation's rounding when `x` is an exact product or sum of values of that dtype: double
/// holds more than twice their precision plus two.
double rounded_to(DType dtype, double x);

/// The stored bits of `x` cast to `dtype` (F16 or BF16) as torch casts a float32 tensor: round to nearest even,
/// overflow to infinity, NaN kept. Bit operations rather than rounded_to's arithmetic: the dequantizing loops call it
/// for every entry of every block's table.
uint16_t narrow_bits(DType dtype, float x);

/// The value type a table of dequantized values holds for the kernel: the 16-bit patterns of an F16 or BF16 result,
/// read by the kernel of that dtype (half the bytes of float32), else float32 itself.
template <DType kResult>
using NarrowValue = std::conditional_t<kResult == DType::F16 || kResult == DType::BF16, uint16_t, float>;

/// `x` as the table value of a `kResult` result (NarrowValue).
template <DType kResult>
NarrowValue<kResult> narrow_value(float x) {
  if constexpr (kResult == DType::F16 || kResult == DType::BF16)
    return narrow_bits(kResult, x);
  else
    return x;
}

}  // namespace precdetect
