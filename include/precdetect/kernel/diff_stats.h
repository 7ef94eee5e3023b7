#pragma once
/// What `precdetect diff` measures of one tensor pair: closeness, magnitudes of the update, and bf16-aware update
/// sparsity (seed 004; docs/diff.md). The CPU kernel (diff_kernel.h) and the CUDA plugin both fill it.

#include <cstdint>
#include <map>

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

}  // namespace precdetect
