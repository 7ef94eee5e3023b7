#pragma once
/// How one tensor changed between two checkpoints: closeness, magnitudes of the update, and bf16-aware update
/// sparsity (seed 004; docs/diff.md).

#include <cstdint>

#include "precdetect/analyze/device.h"
#include "precdetect/kernel/diff_options.h"
#include "precdetect/kernel/diff_stats.h"
#include "precdetect/kernel/host_values.h"
#include "precdetect/kernel/tensor_stats.h"

namespace precdetect {

/// Compares two tensors of the same shape (any floating dtypes) in float64: on the CPU in one fused pass of our
/// own (diff_kernel.h), on CUDA with libtorch ops chunk by chunk in the CUDA plugin (cuda/torch_diff.h). Both give
/// the same statistics.
DiffStats diff_values(const HostValues& base, const HostValues& other, const DiffOptions& options,
                      const ComputeDevice& device);

/// A tensor against a bitwise copy of itself, from the scan kernel's statistics of one side (half the reading and
/// a fraction of the arithmetic): every update is exactly zero but at NaN and Inf, where it is NaN (Inf - Inf).
DiffStats identical_diff(const TensorStats& values, const DiffOptions& options);

}  // namespace precdetect
