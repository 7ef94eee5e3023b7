#pragma once
/// `precdetect diff`'s statistics as libtorch ops, chunk by chunk in float64: the CUDA plugin's diff.

#include <ATen/core/Tensor.h>

#include "precdetect/kernel/diff_options.h"
#include "precdetect/kernel/diff_stats.h"

namespace precdetect {

/// The statistics of diff_values, computed by libtorch on `device` (the tensors are copied there chunk by chunk).
/// On the CPU too, so that tests can hold it to our kernel without a GPU.
DiffStats diff_tensors_with_ops(const at::Tensor& base, const at::Tensor& other, const DiffOptions& options,
                                at::Device device);

}  // namespace precdetect
