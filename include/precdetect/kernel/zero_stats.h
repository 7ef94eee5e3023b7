#pragma once
/// The statistics of zeros that are not stored (an ONNX sparse tensor's implicit zeros), without a buffer of them:
/// a sparse tensor may declare 2^60 elements.

#include <cstdint>

#include "precdetect/core/dtype.h"
#include "precdetect/kernel/tensor_stats.h"

namespace precdetect {

/// The statistics of `count` zeros of `dtype` (DTypeKind::kFloat), equal to cpu_tensor_stats of a buffer of that
/// many: the kernel's statistics of one zero, its counts times `count` (a zero adds nothing to the sum of squares
/// and leaves the magnitudes at 0). Empty statistics for a count of 0. Throws std::invalid_argument for a dtype of
/// another kind (a block-quantized type has no single zero element).
TensorStats zero_stats(DType dtype, uint64_t count);

}  // namespace precdetect
