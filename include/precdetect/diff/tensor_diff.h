#pragma once
/// How one tensor changed between two checkpoints: closeness, magnitudes of the update, and bf16-aware update
/// sparsity (seed 004; docs/diff.md).

#include <cstdint>
#include <map>

#include "precdetect/analyze/device.h"
#include "precdetect/analyze/tensor_stats.h"
#include "precdetect/diff/diff_options.h"
#include "precdetect/load/host_values.h"

namespace precdetect {

/// Counts of update magnitudes by binary exponent: exact for thresholds that are powers of two, percentiles to
/// a factor of two. A value x > 0 with x = m * 2^e, m in [0.5, 1), lands in bin e, i.e. [2^(e-1), 2^e);
/// float64 subnormals (e < -1022) are clamped into bin -1022.
struct UpdateHistogram {
  std::map<int, uint64_t> bins;
  uint64_t zeros = 0;  ///< updates that are exactly zero
  uint64_t total = 0;

  void merge(const UpdateHistogram& other);
  /// Upper edge of the bin holding the p-th percentile (0 for the zero bin); p in [0, 100].
  double percentile(double p) const;
  /// Fraction of updates below 2^exponent (exact).
  double fraction_below(int exponent) const;
};

struct DiffStats {
  uint64_t numel = 0;
  bool identical = true;   ///< every stored value bitwise equal (dtype included)
  uint64_t not_close = 0;  ///< elements outside allclose's tolerance (NaN included)
  double max_abs = 0, sum_abs = 0, max_rel = 0;
  double sum_sq_diff = 0, sum_sq_base = 0, sum_sq_other = 0, dot = 0;
  uint64_t changed = 0;  ///< bf16-aware changed elements
  UpdateHistogram abs_updates, rel_updates;

  void merge(const DiffStats& other);
  double sparsity() const { return numel ? 1.0 - static_cast<double>(changed) / static_cast<double>(numel) : 1.0; }
};

/// Compares two tensors of the same shape (any floating dtypes) in float64: on the CPU in one fused pass of our
/// own (diff_kernel.h), on CUDA with libtorch ops chunk by chunk in the CUDA plugin (cuda/torch_diff.h). Both give
/// the same statistics.
DiffStats diff_values(const HostValues& base, const HostValues& other, const DiffOptions& options,
                      const ComputeDevice& device);

/// A tensor against a bitwise copy of itself, from the scan kernel's statistics of one side (half the reading and
/// a fraction of the arithmetic): every update is exactly zero but at NaN and Inf, where it is NaN (Inf - Inf).
DiffStats identical_diff(const TensorStats& values, const DiffOptions& options);

}  // namespace precdetect
