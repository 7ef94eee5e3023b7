#pragma once
/// The statistics computed with libtorch ops, on whatever device the tensor lives (the CUDA path).

#include <ATen/core/Tensor.h>

#include "precdetect/analyze/tensor_stats.h"

namespace precdetect {

/// Same definitions as cpu_tensor_stats (NaN ignored by min, max and norm; float64 accumulation), computed by
/// libtorch on `values.device()` and copied back in one transfer.
TensorStats torch_tensor_stats(const at::Tensor& values);

}  // namespace precdetect
