#pragma once
/// The statistics of one tensor (or a chunk of one), as every analysis path computes them.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

namespace precdetect {

/// Magnitude limits the counts are taken against (seeds 000-002; docs/json-schema.md). Every value is a float32.
namespace limits {
constexpr double kSeedThreshold = 1e2;  ///< seed 000: bf16-trained models hold |x| > 1e2
constexpr double kE4m3Max = 448.0;      ///< largest finite fp8 E4M3 (fn)
constexpr double kE5m2Max = 57344.0;    ///< largest finite fp8 E5M2
constexpr double kFp16Max = 65504.0;    ///< largest finite fp16
}  // namespace limits

/// Counts of binary exponents of the finite non-zero magnitudes. Bin b (1..254) holds [2^(b-127), 2^(b-126)),
/// as float32's biased exponent field does; bin 0 holds everything below 2^-126 (float32 and bf16 subnormals),
/// bin 255 finite values of 2^128 and more (F64 only). Every fp16 and fp8 range boundary is a bin boundary.
struct ExponentHistogram {
  static constexpr int kBins = 256;
  static constexpr int kBias = 127;
  std::array<uint64_t, kBins> counts{};
  bool operator==(const ExponentHistogram&) const = default;

  /// The bin of 2^exponent; exponents outside float32's normal range fall into the end bins.
  static int bin_of_exponent(int exponent) { return exponent + kBias < 0 ? 0 : std::min(exponent + kBias, kBins - 1); }
  /// Values in [2^low, 2^high) (exponents within the normal range).
  uint64_t between(int low_exponent, int high_exponent) const {
    uint64_t total = 0;
    for (int bin = bin_of_exponent(low_exponent); bin < bin_of_exponent(high_exponent); ++bin) total += counts[bin];
    return total;
  }
  uint64_t below(int exponent) const { return between(-kBias - 1, exponent); }
  uint64_t at_least(int exponent) const {
    uint64_t total = 0;
    for (int bin = bin_of_exponent(exponent); bin < kBins; ++bin) total += counts[bin];
    return total;
  }
};

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

  /// Finite values with a magnitude strictly above each of `limits` (Inf is counted in `infs` only).
  uint64_t above_1e2 = 0, above_e4m3_max = 0, above_e5m2_max = 0, above_fp16_max = 0;
  /// Non-NaN values exactly representable in bf16 / fp16 (Inf and zero are), out of `exactness_checked`: the
  /// non-NaN values of F32 and F64 tensors (a narrower dtype says its own precision, and checks none).
  uint64_t bf16_exact = 0, fp16_exact = 0, exactness_checked = 0;
  ExponentHistogram exponents;

  bool operator==(const TensorStats&) const = default;
  bool has_values() const { return numel > nans; }
  /// bf16_exact / fp16_exact as fractions of the values checked; nullopt when none were.
  std::optional<double> bf16_exact_fraction() const { return fraction_checked(bf16_exact); }
  std::optional<double> fp16_exact_fraction() const { return fraction_checked(fp16_exact); }
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
    above_1e2 += other.above_1e2;
    above_e4m3_max += other.above_e4m3_max;
    above_e5m2_max += other.above_e5m2_max;
    above_fp16_max += other.above_fp16_max;
    bf16_exact += other.bf16_exact;
    fp16_exact += other.fp16_exact;
    exactness_checked += other.exactness_checked;
    for (int bin = 0; bin < ExponentHistogram::kBins; ++bin) exponents.counts[bin] += other.exponents.counts[bin];
  }

 private:
  std::optional<double> fraction_checked(uint64_t exact) const {
    if (exactness_checked == 0) return std::nullopt;
    return static_cast<double>(exact) / static_cast<double>(exactness_checked);
  }
};

}  // namespace precdetect
