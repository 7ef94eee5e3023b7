#pragma once
/// The fused CPU pass of `precdetect diff`: every statistic of DiffStats over two arrays of one stored dtype, in
/// one vectorised loop over both, split across the cores.

#include <cstdint>

#include "precdetect/core/dtype.h"
#include "precdetect/kernel/diff_options.h"
#include "precdetect/kernel/diff_stats.h"

namespace precdetect {

/// True for the dtypes cpu_diff_stats reads directly (float64, float32, float16, bfloat16); others are converted first.
bool has_cpu_diff_kernel(DType dtype);

/// Compares `numel` values at `base` and `other`, both of `dtype` (has_cpu_diff_kernel), aligned to the element
/// size. Leaves DiffStats::identical to the caller (a memcmp answers it faster, and stops at the first difference).
DiffStats cpu_diff_stats(const void* base, const void* other, DType dtype, uint64_t numel, const DiffOptions& options);

}  // namespace precdetect
