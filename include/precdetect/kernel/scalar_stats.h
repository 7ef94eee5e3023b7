#pragma once
/// The statistics one magnitude at a time: the definitions every path follows, used directly for F64 tensors
/// and kernel tails, and for 8- and 16-bit dtypes through counts of their stored codes (CPU kernel and CUDA).

#include <cstdint>

#include "precdetect/core/dtype.h"
#include "precdetect/kernel/tensor_stats.h"

namespace precdetect {

/// Adds `count` values of magnitude `magnitude` (|x|, NaN allowed) to every statistic but the exactness counts.
void add_magnitude(TensorStats& stats, double magnitude, uint64_t count = 1);

/// Adds one F32/F64 magnitude to every statistic, the exactness counts included.
void add_wide_magnitude(TensorStats& stats, double magnitude);

/// Magnitude codes of an 8- or 16-bit float dtype: its stored bits without the sign bit.
uint32_t magnitude_code_count(DType dtype);

/// The magnitude stored code `code` (sign bit cleared) stands for.
double code_magnitude(DType dtype, uint32_t code);

/// Every statistic of a tensor from how often each magnitude code occurs in it (`counts` has
/// magnitude_code_count(dtype) entries): exact counts, extrema and, summed in ascending order, the norm.
template <typename Count>
TensorStats stats_from_code_counts(DType dtype, const Count* counts);

}  // namespace precdetect
