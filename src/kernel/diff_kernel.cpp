#include "precdetect/kernel/diff_kernel.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "precdetect/core/parallel.h"
#include "precdetect/kernel/float_vectors.h"

namespace precdetect {
namespace {

using vectors::Doubles, vectors::Floats, vectors::Ints, vectors::Longs, vectors::LongWords, vectors::Words;
using Floats2 = float __attribute__((vector_size(8)));

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr size_t kBlock = 1 << 14;  // flush interval of the vector lanes: bounds float64 summation error
constexpr uint64_t kMinElementsPerThread = 1 << 18;

/// Four values of one side: as two float64 pairs for the arithmetic, and as float for the bf16 rounding (exact
/// for every stored dtype but F64, whose float64 -> float -> bf16 steps are what libtorch's `.to(kBFloat16)` does).
struct Quad {
  Doubles low, high;
  Floats narrow;
};

Quad from_floats(Floats values) { return {vectors::low_half(values), vectors::high_half(values), values}; }

// What the kernel needs to know of each stored dtype: how to load four values, whether they are bf16 already,
// and whether an update can be a float64 subnormal (only F64: differences and ratios of narrower floats cannot).
struct Bf16Values {
  using Raw = uint16_t;
  static constexpr bool kIsBf16 = true, kSubnormalUpdates = false;
  static Quad load(const Raw* data) { return from_floats(vectors::bf16_values(data)); }
};
struct F16Values {
  using Raw = uint16_t;
  static constexpr bool kIsBf16 = false, kSubnormalUpdates = false;
  static Quad load(const Raw* data) { return from_floats(vectors::f16_values(data)); }
};
struct F32Values {
  using Raw = uint32_t;
  static constexpr bool kIsBf16 = false, kSubnormalUpdates = false;
  static Quad load(const Raw* data) { return from_floats(vectors::f32_values(data)); }
};
struct F64Values {
  using Raw = uint64_t;
  static constexpr bool kIsBf16 = false, kSubnormalUpdates = true;
  static Quad load(const Raw* data) {
    Doubles low, high;
    std::memcpy(&low, data, sizeof(low));
    std::memcpy(&high, data + 2, sizeof(high));
    return {low, high,
            __builtin_shufflevector(__builtin_convertvector(low, Floats2), __builtin_convertvector(high, Floats2), 0, 1,
                                    2, 3)};
  }
};

/// c10's float -> bf16 rounding (to nearest even; every NaN becomes 0x7FC0), as bf16 bit patterns.
Words bf16_bits(Floats values) {
  Words bits = std::bit_cast<Words>(values);
  Words rounded = (bits + ((bits >> 16) & 1) + 0x7FFF) >> 16;
  return values != values ? Words{} + 0x7FC0 : rounded;  // NOLINT(misc-redundant-expression): a lane is NaN
}

Floats round_to_bf16(Floats values) { return std::bit_cast<Floats>(bf16_bits(values) << 16); }

/// bf16 bit patterns with -0 folded onto +0: they are the same weight.
Words canonical_bf16_bits(Floats values) {
  Words bits = bf16_bits(values);
  return (bits & 0x7FFF) == 0 ? Words{} : bits;
}

Doubles max(Doubles a, Doubles b) { return a > b ? a : b; }  // b where either is NaN (maxpd)
Doubles where(Longs mask, Doubles values) { return std::bit_cast<Doubles>(mask & std::bit_cast<Longs>(values)); }
/// Biased float64 exponent of non-negative values (of NaN with its sign bit masked).
LongWords biased_exponent(Doubles values) { return (std::bit_cast<LongWords>(values) >> 52) & 0x7FF; }

/// Counts of update magnitudes by float64 biased exponent, four interleaved copies (one per lane of a Quad):
/// consecutive increments of one bin would otherwise wait on each other's store.
struct ExponentBins {
  std::array<std::array<uint64_t, 2048>, 4> copies{};

  void add(LongWords low, LongWords high) {
    ++copies[0][low[0]];
    ++copies[1][low[1]];
    ++copies[2][high[0]];
    ++copies[3][high[1]];
  }
  /// Biased exponent E of a finite x > 0 is frexp's exponent + 1022. E = 0 holds the `zeros` and float64
  /// subnormals, which thus land in frexp bin -1022 (docs/diff.md). E = 2047 (Inf, NaN) counts in the total only,
  /// less `not_counted` lanes that hold no value at all.
  void flush_into(UpdateHistogram& histogram, uint64_t zeros, uint64_t not_counted) const {
    for (size_t biased = 0; biased < 2048; ++biased) {
      uint64_t count = copies[0][biased] + copies[1][biased] + copies[2][biased] + copies[3][biased];
      histogram.total += count;
      if (biased == 0) count -= zeros;
      if (count && biased < 2047) histogram.bins[static_cast<int>(biased) - 1022] += count;
    }
    histogram.zeros += zeros;
    histogram.total -= not_counted;
  }
};

/// One thread's part of the comparison, two float64 lanes at a time: vector accumulators flushed into the totals
/// every kBlock elements (which bounds float64 summation error), exponent bins counted to the end.
template <typename Values, bool kBitwise>
class RangeDiff {
 public:
  explicit RangeDiff(const DiffOptions& options) : atol_(options.atol), rtol_(options.rtol), eta_(options.eta) {}

  DiffStats run(const typename Values::Raw* a, const typename Values::Raw* b, size_t numel) {
    size_t i = 0;
    while (i + 4 <= numel) {
      for (size_t block_end = std::min(numel - 3, i + kBlock); i < block_end; i += 4)
        add(Values::load(a + i), Values::load(b + i));
      flush();
    }
    if (i < numel) {  // the tail, zero-padded to four: equal zeros add only exact-zero updates, taken out below
      typename Values::Raw tail_a[4]{}, tail_b[4]{};
      std::copy(a + i, a + numel, tail_a);
      std::copy(b + i, b + numel, tail_b);
      add(Values::load(tail_a), Values::load(tail_b));
      flush();
      for (size_t lane = numel - i; lane < 4; ++lane) --abs_bins_.copies[lane][0];
      abs_zeros_[0] -= static_cast<int64_t>(4 - (numel - i));
    }
    total_.numel = numel;
    // Without float64 subnormals (all but F64) bin 0 holds only zeros. A zero base makes the relative update Inf
    // or NaN (bin 2047), which is no relative update at all.
    uint64_t abs_zeros = Values::kSubnormalUpdates ? sum_lanes(abs_zeros_) : sum_copies(abs_bins_, 0);
    uint64_t rel_zeros = Values::kSubnormalUpdates ? sum_lanes(rel_zeros_) : sum_copies(rel_bins_, 0);
    abs_bins_.flush_into(total_.abs_updates, abs_zeros, 0);
    rel_bins_.flush_into(total_.rel_updates, rel_zeros, sum_lanes(zero_bases_));
    return total_;
  }

 private:
  static uint64_t sum_lanes(Longs counts) { return static_cast<uint64_t>(counts[0] + counts[1]); }
  static uint64_t sum_copies(const ExponentBins& bins, size_t biased) {
    return bins.copies[0][biased] + bins.copies[1][biased] + bins.copies[2][biased] + bins.copies[3][biased];
  }

  void add(const Quad& a, const Quad& b) {
    if constexpr (kBitwise) {
      changed_bits_ -= canonical_bf16_bits(a.narrow) != canonical_bf16_bits(b.narrow);
      auto [abs_low, rel_low] = add_pair(a.low, b.low, a.low, b.low);
      auto [abs_high, rel_high] = add_pair(a.high, b.high, a.high, b.high);
      abs_bins_.add(abs_low, abs_high);
      rel_bins_.add(rel_low, rel_high);
    } else {
      Quad wa = Values::kIsBf16 ? a : from_floats(round_to_bf16(a.narrow));  // bf16 values are their own rounding
      Quad wb = Values::kIsBf16 ? b : from_floats(round_to_bf16(b.narrow));
      auto [abs_low, rel_low] = add_pair(a.low, b.low, wa.low, wb.low);
      auto [abs_high, rel_high] = add_pair(a.high, b.high, wa.high, wb.high);
      abs_bins_.add(abs_low, abs_high);
      rel_bins_.add(rel_low, rel_high);
    }
  }

  /// Two elements: `a`, `b` the values, `wa`, `wb` the same rounded to bf16. Returns their exponent bins.
  std::pair<LongWords, LongWords> add_pair(Doubles a, Doubles b, Doubles wa, Doubles wb) {
    Doubles diff = b - a, update = vectors::magnitudes(diff), base = vectors::magnitudes(a);
    not_close_ += (update <= atol_ + rtol_ * base) + 1;  // NaN is never close
    Doubles finite_update = where(update < kInf, update);
    max_abs_ = max(finite_update, max_abs_);
    sum_abs_ += finite_update;
    sum_sq_diff_ += diff * diff;
    sum_sq_base_ += a * a;
    sum_sq_other_ += b * b;
    dot_ += a * b;
    Doubles relative = update / base;  // Inf or NaN where base is 0: counted in zero_bases_, taken out at the end
    max_rel_ = max(where(relative < kInf, relative), max_rel_);
    zero_bases_ -= base == 0;
    if constexpr (!kBitwise) {  // the eta rule of seed 004; NaN compares false, so a NaN counts as changed
      Doubles distance = Values::kIsBf16 ? update : vectors::magnitudes(wb - wa);
      Doubles larger = max(Values::kIsBf16 ? base : vectors::magnitudes(wa), vectors::magnitudes(wb));
      changed_ += ((distance <= eta_ * larger) | (larger < kBothZeroBelow)) + 1;
    }
    if constexpr (Values::kSubnormalUpdates) {
      abs_zeros_ -= update == 0;
      rel_zeros_ -= relative == 0;
    }
    return {biased_exponent(update), biased_exponent(relative)};
  }

  void flush() {
    for (int lane = 0; lane < 2; ++lane) {
      total_.max_abs = std::max(total_.max_abs, max_abs_[lane]);
      total_.max_rel = std::max(total_.max_rel, max_rel_[lane]);
      total_.sum_abs += sum_abs_[lane];
      total_.sum_sq_diff += sum_sq_diff_[lane];
      total_.sum_sq_base += sum_sq_base_[lane];
      total_.sum_sq_other += sum_sq_other_[lane];
      total_.dot += dot_[lane];
      total_.not_close += static_cast<uint64_t>(not_close_[lane]);
      total_.changed += static_cast<uint64_t>(changed_[lane]);
    }
    for (int lane = 0; lane < 4; ++lane) total_.changed += static_cast<uint64_t>(changed_bits_[lane]);
    sum_abs_ = sum_sq_diff_ = sum_sq_base_ = sum_sq_other_ = dot_ = Doubles{};
    not_close_ = changed_ = Longs{};
    changed_bits_ = Ints{};
  }

  double atol_, rtol_, eta_;  // copies, so the compiler need not reload them after each histogram store
  DiffStats total_;
  Doubles max_abs_{}, max_rel_{}, sum_abs_{}, sum_sq_diff_{}, sum_sq_base_{}, sum_sq_other_{}, dot_{};
  Longs not_close_{}, changed_{}, zero_bases_{};
  Ints changed_bits_{};              // --bitwise: counted on the four bf16 patterns at once
  Longs abs_zeros_{}, rel_zeros_{};  // F64 only
  ExponentBins abs_bins_, rel_bins_;
};

template <typename Values>
DiffStats diff_arrays(const void* base, const void* other, uint64_t numel, const DiffOptions& options) {
  const auto* a = static_cast<const typename Values::Raw*>(base);
  const auto* b = static_cast<const typename Values::Raw*>(other);
  return reduce_in_parallel(numel, kMinElementsPerThread, [=, &options](uint64_t begin, uint64_t end) {
    if (options.bitwise) return RangeDiff<Values, true>(options).run(a + begin, b + begin, end - begin);
    return RangeDiff<Values, false>(options).run(a + begin, b + begin, end - begin);
  });
}

}  // namespace

bool has_cpu_diff_kernel(DType dtype) {
  return dtype == DType::F64 || dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}

DiffStats cpu_diff_stats(const void* base, const void* other, DType dtype, uint64_t numel, const DiffOptions& options) {
  switch (dtype) {
    case DType::F64:
      return diff_arrays<F64Values>(base, other, numel, options);
    case DType::F32:
      return diff_arrays<F32Values>(base, other, numel, options);
    case DType::F16:
      return diff_arrays<F16Values>(base, other, numel, options);
    case DType::BF16:
      return diff_arrays<Bf16Values>(base, other, numel, options);
    default:
      throw std::invalid_argument("cpu_diff_stats: no kernel for this dtype");
  }
}

}  // namespace precdetect
