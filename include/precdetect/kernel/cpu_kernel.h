#pragma once
/// The CPU statistics kernel: one fused pass over a tensor's raw little-endian bytes.

#include <cstdint>

#include "precdetect/core/dtype.h"
#include "precdetect/kernel/kernel_isa.h"
#include "precdetect/kernel/tensor_stats.h"

namespace precdetect {

/// Statistics of `numel` values of floating dtype `dtype` stored at `values`, at any alignment; of a block-quantized
/// dtype (DTypeKind::kQuantized), of its dequantized values (`numel` a whole number of blocks).
/// Throws std::invalid_argument for a dtype that is neither. Large tensors are split across threads. Squares are exact
/// in float64 for every dtype narrower than F64 and summed per block, so the norm matches a float64 reference to ~1e-12
/// relative.
TensorStats cpu_tensor_stats(const void* values, DType dtype, uint64_t numel);

/// The same on the path of instruction set `isa` (one of supported_kernel_isas()): the statistics are equal bit for
/// bit on every path. For tests and benchmarks; the scan takes the best path.
TensorStats cpu_tensor_stats(const void* values, DType dtype, uint64_t numel, KernelIsa isa);

}  // namespace precdetect
