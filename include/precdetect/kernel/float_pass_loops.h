#pragma once
/// The loops of the CPU kernel's F32 and F64 passes (float_passes.h), as templates over an instruction set's lanes
/// (isa_lanes.h). Included by float_passes.cpp for the baseline and by float_passes_avx2.cpp inside a region compiled
/// for AVX2, as Highway builds each target from one source (google/highway: hwy/foreach_target.h,
/// HWY_BEFORE_NAMESPACE): everything here has internal linkage, so that each file's copy, compiled for its own target,
/// is its own (a shared inline function would be one symbol, and the linker could hand the baseline the AVX2 copy).
/// Nothing here passes a 256-bit vector to a function outside the region (std::bit_cast is one: vector casts instead).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "precdetect/kernel/float_passes.h"
#include "precdetect/kernel/isa_lanes.h"
#include "precdetect/kernel/scalar_stats.h"
#include "precdetect/kernel/tensor_stats.h"

namespace precdetect {
// NOLINTNEXTLINE(cert-dcl59-cpp,google-build-namespaces): internal linkage on purpose (above)
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

/// Magnitudes: the sign bit cleared.
template <typename Floats, typename Words>
Floats magnitudes(Floats values) {
  return (Floats)((Words)values & 0x7FFFFFFFu);
}

// A pass adds eight F32 values per step (two vectors of four, or one of eight), each lane to a float64 chain of its
// own: value i + k of a block to chain k. Every path keeps these eight chains and adds them up in the same order
// when a block ends, so that their sum is the same bit for bit.
constexpr size_t kStep = 8;
constexpr size_t kBlock = 1 << 14;  // flush interval: bounds float64 summation error and int32 lane counts

/// F32 accumulators of one vector: extrema, NaN and the sum of squares, the statistics every value adds to
/// (add_magnitude's first half; zeros and Inf are counted by NarrowFormatLanes). Whole vectors as plain members, not
/// arrays indexed by chain: with those GCC spilled the squares to the stack, and every add waited on a store and a
/// reload.
template <class L>
struct FloatVectorLanes {
  using Floats = typename L::Floats;
  using Ints = typename L::Ints;
  using Doubles = typename L::Doubles;
  Floats lo = Floats{} + kInf, hi = Floats{} - kInf;
  Doubles squares_low{}, squares_high{};
  Ints nans{};

  void add(Floats a) {
    Ints is_nan = a != a;  // NOLINT(misc-redundant-expression): NaN, lane by lane
    nans -= is_nan;
    lo = a < lo ? a : lo;  // comparisons with NaN are false: NaN never wins
    hi = a > hi ? a : hi;
    Floats kept = (Floats)((Ints)a & ~is_nan);  // NaN -> +0 for the sum of squares
    Doubles low = L::low_half(kept), high = L::high_half(kept);
    squares_low += low * low;  // exact: a float's square fits a double
    squares_high += high * high;
  }
  /// The float64 chain of lane `k`.
  double chain(size_t k) const { return k < L::kWidth / 2 ? squares_low[k] : squares_high[k - L::kWidth / 2]; }
  void flush_into(TensorStats& total) const {
    for (size_t k = 0; k < L::kWidth; ++k) {
      total.abs_min = std::fmin(total.abs_min, static_cast<double>(lo[k]));
      total.abs_max = std::fmax(total.abs_max, static_cast<double>(hi[k]));
      total.nans += static_cast<uint64_t>(nans[k]);
    }
    // Lanes 4q..4q+3 hold a step's values 4q..4q+3 on every path: chains (0, 2), (1, 3), then (4, 6), (5, 7).
    for (size_t q = 0; q < L::kWidth; q += 4) {
      total.sum_squares += chain(q) + chain(q + 2);
      total.sum_squares += chain(q + 1) + chain(q + 3);
    }
  }
};

/// Which lanes of F32 magnitudes `a` (NaN, Inf, zero allowed) are exact in bf16 and in fp16 (add_wide_magnitude's
/// definitions; NaN never is, zero and Inf are).
template <typename Floats, typename Ints, typename Words>
std::array<Ints, 2> narrow_exactness(Floats a) {
  auto bits = (Words)a;
  Ints is_nan = a != a, is_inf = a == kInf;      // NOLINT(misc-redundant-expression)
  Ints bf16 = ((bits & 0xFFFF) == 0) & ~is_nan;  // bf16 is float32's upper half
  // fp16: normals keep 10 mantissa bits; below 2^-14 a value must be a multiple of 2^-24, which adding and
  // subtracting 0.5 (ulp 2^-24) leaves unchanged.
  Ints fp16_normal = ((bits & 0x1FFF) == 0) & (a >= 0x1p-14f) & (a <= static_cast<float>(limits::kFp16Max));
  Ints fp16_small = (a < 0x1p-14f) & (((a + 0.5f) - 0.5f) == a);
  return {bf16, fp16_normal | fp16_small | is_inf};
}

/// Counts of zeros, Inf and the magnitudes above each narrow format's largest finite value (add_wide_magnitude's
/// limits, compared in `Scalar`: F32's pass compares floats, F64's doubles), lane by lane over vectors of magnitudes
/// `Values` with counting lanes `Counts` of their width.
template <typename Scalar, typename Values, typename Counts>
struct LimitCounts {
  Counts zeros{}, infs{}, above_seed{}, above_e4m3{}, above_e5m2{}, above_fp16{};

  void add(Values a) {
    Counts is_inf = a == std::numeric_limits<Scalar>::infinity();
    Values finite = is_inf ? Values{} : a;
    zeros -= a == 0;
    infs -= is_inf;
    above_seed -= finite > static_cast<Scalar>(limits::kSeedThreshold);
    above_e4m3 -= finite > static_cast<Scalar>(limits::kE4m3Max);
    above_e5m2 -= finite > static_cast<Scalar>(limits::kE5m2Max);
    above_fp16 -= finite > static_cast<Scalar>(limits::kFp16Max);
  }
  void flush_into(TensorStats& total) const {
    for (size_t k = 0; k < sizeof(Counts) / sizeof(zeros[0]); ++k) {
      auto count = [](auto lane) { return static_cast<uint64_t>(lane); };
      total.zeros += count(zeros[k]);
      total.infs += count(infs[k]);
      total.above_1e2 += count(above_seed[k]);
      total.above_e4m3_max += count(above_e4m3[k]);
      total.above_e5m2_max += count(above_e5m2[k]);
      total.above_fp16_max += count(above_fp16[k]);
    }
  }
};

/// F32 counts against narrower formats (add_wide_magnitude's limits and exactness), and of zeros and Inf. Only
/// values above the lowest limit or with their low 13 bits zero can count (zero and Inf have them zero), and most
/// vectors of trained fp32 weights hold neither: the loop tests each step's vectors (a few instructions and a
/// branch) and adds them only when a lane may count. Without exactness (dequantized values, whose exactness says
/// nothing: most are exact in bf16) only zeros, Inf and the counts above the limits are kept.
template <class L, Exactness kExactness>
struct NarrowFormatLanes {
  using Floats = typename L::Floats;
  using Ints = typename L::Ints;
  using Words = typename L::Words;
  static constexpr bool kCounted = kExactness == Exactness::kCounted;
  LimitCounts<float, Floats, Ints> limit_counts;
  Ints bf16_exact{}, fp16_exact{};

  static Ints may_count(Floats a) {
    if constexpr (kCounted)
      return (a > static_cast<float>(limits::kSeedThreshold)) | (((Words)a & 0x1FFF) == 0);
    else
      return (a > static_cast<float>(limits::kSeedThreshold)) | (a == 0);  // Inf is above the threshold
  }

  void add(Floats a) {
    limit_counts.add(a);
    if constexpr (!kCounted) return;
    auto [bf16, fp16] = narrow_exactness<Floats, Ints, Words>(a);
    bf16_exact -= bf16;
    fp16_exact -= fp16;
  }
  void flush_into(TensorStats& total) const {
    limit_counts.flush_into(total);
    for (size_t i = 0; i < L::kWidth; ++i) {
      total.bf16_exact += static_cast<uint64_t>(bf16_exact[i]);
      total.fp16_exact += static_cast<uint64_t>(fp16_exact[i]);
    }
  }
};

/// The exponent histogram of F32 magnitudes, counted a step at a time inside the vector loop (two values per
/// 64-bit load: fewer instructions than taking them out of a vector register), one table per position so that
/// runs of equal exponents (most of a trained tensor's values share a handful) do not wait on each other's
/// increments. The increments are scalar stores; between the vector work they cost less than in a pass of their
/// own (docs/benchmarks.md, "Figures behind the code"; tests/bench/kernel_bench.cpp times it).
class ExponentCounter {
 public:
  void count(const std::byte* values) {
    for (size_t k = 0; k < kStep / 2; ++k) {
      auto word = vectors::load<uint64_t>(values, k);  // little-endian: the first value in the low bits
      ++tables_[2 * k][(word >> 23) & 0xFF];
      ++tables_[2 * k + 1][(word >> 55) & 0xFF];
    }
  }
  /// Zeros landed in bin 0 and Inf/NaN in bin 255; both are counted elsewhere and left out here.
  void flush_into(TensorStats& total, uint64_t zeros) const {
    for (const auto& table : tables_)
      for (int bin = 0; bin < ExponentHistogram::kBins - 1; ++bin) total.exponents.counts[bin] += table[bin];
    total.exponents.counts[0] -= zeros;
  }

 private:
  std::array<std::array<uint32_t, ExponentHistogram::kBins>, kStep> tables_{};
};

/// One pass over F32 values [begin, end): a step at a time, then the scalar definitions for the tail.
template <class L, Exactness kExactness>
TensorStats reduce_floats(const std::byte* data, size_t begin, size_t end) {
  constexpr size_t kVectors = kStep / L::kWidth;
  using Lanes = NarrowFormatLanes<L, kExactness>;
  TensorStats total;
  ExponentCounter exponents;
  size_t i = begin;
  while (i + kStep <= end) {
    std::array<FloatVectorLanes<L>, kVectors> chains;
    Lanes narrow;
    for (size_t block_end = std::min(end, i + kBlock); i + kStep <= block_end; i += kStep) {
      std::array<typename L::Floats, kVectors> values;
      typename L::Ints may_count{};
      vectors::prefetch_ahead(data + 4 * i);
      for (size_t v = 0; v < kVectors; ++v) {
        values[v] = magnitudes<typename L::Floats, typename L::Words>(L::load_floats(data + 4 * (i + v * L::kWidth)));
        chains[v].add(values[v]);
        may_count |= Lanes::may_count(values[v]);
      }
      exponents.count(data + 4 * i);  // before the branch: after it, GCC's code was slower (docs/benchmarks.md)
      if (L::any(may_count))
        for (const auto& value : values) narrow.add(value);
    }
    for (const auto& lanes : chains) lanes.flush_into(total);
    narrow.flush_into(total);
  }
  total.numel = i - begin;
  total.exactness_checked = total.numel - total.nans;
  exponents.flush_into(total, total.zeros);
  TensorStats tail;
  for (; i < end; ++i) add_wide_magnitude(tail, std::fabs(static_cast<double>(vectors::load<float>(data, i))));
  total.merge(tail);
  return total;
}

/// The accumulators of one F64 block, four values (a step) at a time: the sum of squares in one float64 chain,
/// value after value, as add_magnitude sums them; extrema and NaN in vectors; zeros, Inf, the counts above the
/// limits and the exactness only for steps where a lane may count (above the lowest limit, or a float32 at all:
/// zero and Inf are); exponents by their 11-bit field, one table for the pass.
template <class L>
class DoubleSteps {
 public:
  static constexpr size_t kPerVector = L::kWidth / 2, kVectors = 4 / kPerVector;
  using Doubles = typename L::Doubles;
  using Longs = typename L::Longs;
  using Values = std::array<Doubles, kVectors>;

  explicit DoubleSteps(std::array<uint32_t, 2048>& fields) : fields_(fields) {}

  void add(const std::byte* data) {
    Values values;
    std::array<Longs, kVectors> float_exact;
    Longs may_count{};
    for (size_t v = 0; v < kVectors; ++v) {
      Doubles a = L::load_doubles(data + 8 * v * kPerVector);
      a = (Doubles)((typename L::LongWords)a & 0x7FFFFFFFFFFFFFFFull);
      Longs is_nan = a != a;  // NOLINT(misc-redundant-expression): NaN, lane by lane
      nans_ -= is_nan;
      lo_ = a < lo_ ? a : lo_;
      hi_ = a > hi_ ? a : hi_;
      Doubles kept = (Doubles)((Longs)a & ~is_nan);
      Doubles squares = kept * kept;
      for (size_t k = 0; k < kPerVector; ++k) squares_ += squares[k];
      float_exact[v] = L::float_exact(a);
      may_count |= (a > limits::kSeedThreshold) | float_exact[v];
      values[v] = a;
    }
    for (size_t k = 0; k < 4; ++k) ++fields_[(vectors::load<uint64_t>(data, k) >> 52) & 0x7FF];
    if (L::any(may_count)) count_narrow(values, float_exact);
  }

  /// The block's statistics, but its exponents (in the fields).
  TensorStats stats(size_t numel) const {
    TensorStats part;
    part.numel = numel;
    part.sum_squares = squares_;
    for (size_t k = 0; k < kPerVector; ++k) {
      auto count = [](int64_t lane) { return static_cast<uint64_t>(lane); };
      part.abs_min = std::fmin(part.abs_min, lo_[k]);
      part.abs_max = std::fmax(part.abs_max, hi_[k]);
      part.nans += count(nans_[k]);
    }
    limit_counts_.flush_into(part);
    for (size_t k = 0; k < 4; ++k) {
      part.bf16_exact += static_cast<uint64_t>(bf16_exact_[k]);
      part.fp16_exact += static_cast<uint64_t>(fp16_exact_[k]);
    }
    part.exactness_checked = part.numel - part.nans;
    return part;
  }

 private:
  void count_narrow(const Values& values, const std::array<Longs, kVectors>& float_exact) {
    for (Doubles a : values) limit_counts_.add(a);
    // Exactness as the F32 pass decides it, of the four values narrowed to float where that is exact.
    vectors::Floats narrow = L::narrowed(values);
    vectors::Ints exact = L::narrowed(float_exact);
    auto [bf16, fp16] = narrow_exactness<vectors::Floats, vectors::Ints, vectors::Words>(narrow);
    bf16_exact_ -= bf16 & exact;
    fp16_exact_ -= fp16 & exact;
  }

  std::array<uint32_t, 2048>& fields_;
  double squares_ = 0;
  Doubles lo_ = Doubles{} + static_cast<double>(kInf), hi_ = Doubles{} - static_cast<double>(kInf);
  Longs nans_{};
  LimitCounts<double, Doubles, Longs> limit_counts_;
  vectors::Ints bf16_exact_{}, fp16_exact_{};
};

/// F64 values [begin, end), in blocks whose squares are summed value after value (add_magnitude's order, as the
/// scalar loop this replaced had them: the norms are the same bit for bit), four values at a time.
template <class L>
TensorStats reduce_doubles(const std::byte* data, size_t begin, size_t end) {
  TensorStats total;
  std::array<uint32_t, 2048> fields{};  // counts of each 11-bit exponent field (sign cleared)
  uint64_t stepped_zeros = 0;
  for (size_t block = begin; block < end; block += kBlock) {
    size_t block_end = std::min(end, block + kBlock), i = block;
    DoubleSteps<L> steps(fields);
    for (; i + 4 <= block_end; i += 4) {
      vectors::prefetch_ahead(data + 8 * i);
      steps.add(data + 8 * i);
    }
    TensorStats part = steps.stats(i - block);
    stepped_zeros += part.zeros;
    for (; i < block_end; ++i) add_wide_magnitude(part, std::fabs(vectors::load<double>(data, i)));
    total.merge(part);
  }
  // Field 0 holds zeros and float64 subnormals (bin 0), 2047 Inf and NaN (counted elsewhere); the rest fall into
  // their float32 bin, clamped at both ends (ExponentHistogram).
  fields[0] -= static_cast<uint32_t>(stepped_zeros);
  for (int field = 0; field < 2047; ++field)
    total.exponents.counts[ExponentHistogram::bin_of_exponent(field - 1023)] += fields[field];
  return total;
}

}  // namespace

/// The AVX2 path's passes (float_passes_avx2.cpp), for f32_pass and f64_pass to call where the CPU has AVX2.
namespace avx2_path {
TensorStats f32_pass(const std::byte* data, size_t begin, size_t end, Exactness exactness);
TensorStats f64_pass(const std::byte* data, size_t begin, size_t end);
}  // namespace avx2_path

}  // namespace precdetect
