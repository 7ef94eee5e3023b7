#pragma once
/// The statistics computed with libtorch ops, on whatever device the tensor lives (the CUDA path).

#include <ATen/core/Tensor.h>

#include "precdetect/analyze/tensor_stats.h"

namespace precdetect {

/// Same definitions as cpu_tensor_stats (NaN ignored by min, max and norm; float64 accumulation), computed by
/// libtorch on `values.device()` and copied back in one transfer.
TensorStats torch_tensor_stats(const at::Tensor& values);

/// The same in two steps, so a caller can queue the work and collect it later: six float64 values on the
/// tensor's device (queued, not awaited; `values` must not be empty), then the statistics from those values
/// once they are on the CPU.
at::Tensor torch_stats_summary(const at::Tensor& values);
TensorStats stats_from_summary(uint64_t numel, const at::Tensor& summary);

}  // namespace precdetect
