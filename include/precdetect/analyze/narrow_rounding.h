#pragma once
/// Rounding to the narrow float formats the dequantizing kernels compute in: what a product or sum formed in a
/// scale's dtype (float16, bfloat16, float32) holds.

#include "precdetect/core/dtype.h"

namespace precdetect {

/// `x` as the nearest value of `dtype` (F32, F16 or BF16; any other dtype: float32), ties to even, overflowing to
/// infinity. Exact as one operation's rounding when `x` is an exact product or sum of values of that dtype: double
/// holds more than twice their precision plus two.
double rounded_to(DType dtype, double x);

}  // namespace precdetect
