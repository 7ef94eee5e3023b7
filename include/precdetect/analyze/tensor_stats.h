#pragma once
/// The statistics of one tensor (or a chunk of one), as every analysis path computes them.

#include <cmath>
#include <cstdint>
#include <limits>

namespace precdetect {

struct TensorStats {
  uint64_t numel = 0;
  uint64_t zeros = 0;
  uint64_t nans = 0;
  uint64_t infs = 0;
  /// Magnitudes over the non-NaN values (Inf included); meaningful only when has_values().
  double abs_min = std::numeric_limits<double>::infinity();
  double abs_max = -std::numeric_limits<double>::infinity();
  /// Sum of squares of the non-NaN values, accumulated in float64.
  double sum_squares = 0.0;

  bool has_values() const { return numel > nans; }
  /// L2 (Frobenius) norm over the non-NaN values.
  double norm() const { return std::sqrt(sum_squares); }

  void merge(const TensorStats& other) {
    numel += other.numel;
    zeros += other.zeros;
    nans += other.nans;
    infs += other.infs;
    abs_min = std::fmin(abs_min, other.abs_min);
    abs_max = std::fmax(abs_max, other.abs_max);
    sum_squares += other.sum_squares;
  }
};

}  // namespace precdetect
