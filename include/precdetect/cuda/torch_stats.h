#pragma once
/// The statistics computed with libtorch ops, on whatever device the tensor lives (the CUDA path).

#include <ATen/core/Tensor.h>

#include "precdetect/core/dtype.h"
#include "precdetect/kernel/tensor_stats.h"

namespace precdetect {

/// Same definitions as cpu_tensor_stats, computed by libtorch on `values.device()` (`values` holds a tensor
/// stored as floating `dtype`) and copied back in one transfer.
TensorStats torch_tensor_stats(const at::Tensor& values, DType dtype);

/// The same in two steps, so a caller can queue the work and collect it later: a float64 summary on the
/// tensor's device (queued, never awaited; `values` must not be empty), then the statistics from it once it
/// is on the CPU. 8- and 16-bit dtypes are summarized as counts of each magnitude code, read back by the
/// same code as the CPU kernel's; F32 and F64 as their statistics per slice.
at::Tensor torch_stats_summary(const at::Tensor& values, DType dtype);
TensorStats stats_from_summary(DType dtype, const at::Tensor& summary);

}  // namespace precdetect
