#pragma once
/// The CPU kernel's passes over stored F32 and F64 values, on each instruction set's path (kernel_isa.h). Both
/// compute every statistic exactly as scalar_stats.h's add_wide_magnitude defines it, and on every path the same
/// float64 sums in the same order: the results are equal bit for bit.

#include <cstddef>

#include "precdetect/kernel/kernel_isa.h"
#include "precdetect/kernel/tensor_stats.h"

namespace precdetect {

/// Whether a pass counts bf16/fp16 exactness: not for values dequantized from a block format, whose exactness says
/// nothing of how the weights were stored (the counts of the vector lanes are then zero, the tail's are kept).
enum class Exactness { kCounted, kSkipped };

/// Statistics of the F32 values [begin, end) stored at `data` (any alignment): at most 2^31 values (the lanes'
/// counts are 32-bit).
TensorStats f32_pass(KernelIsa isa, const std::byte* data, size_t begin, size_t end,
                     Exactness exactness = Exactness::kCounted);

/// Statistics of the F64 values [begin, end) stored at `data` (any alignment), at most 2^31 of them.
TensorStats f64_pass(KernelIsa isa, const std::byte* data, size_t begin, size_t end);

}  // namespace precdetect
