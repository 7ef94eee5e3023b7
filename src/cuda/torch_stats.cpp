#include "precdetect/cuda/torch_stats.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/frexp.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>

#include <limits>

#include "precdetect/kernel/scalar_stats.h"

namespace precdetect {
namespace {

// Every reduction below is one whose result stays on the device: nothing waits on the GPU until the summary
// is copied back. (at::bincount would read its input's maximum back first.)
// Counts are float64 (exact below 2^53), and work is sliced so temporaries stay a few hundred MiB.
constexpr int64_t kSlice = int64_t{1} << 26;

bool counted_by_code(DType dtype) { return dtype_bits(dtype) <= 16; }

/// How often each bin number in [0, bins) occurs in `bin_numbers` (int64, flat; the number `bins` itself marks a
/// value not counted), as float64 counts.
///
/// Neighbouring values, which neighbouring GPU threads count, often fall in one bin (a bf16 tensor of normal(0,
/// 0.02) values uses a few hundred codes, an F32 one a dozen exponents): added to one counter, their atomic
/// increments wait on each other. So each position modulo kLanes counts into its own copy of the bins, and the
/// copies are summed at the end (32 lanes counted five times faster than one: docs/benchmarks.md, "Figures behind the
/// code"). The counters are int64 (scatter_add_), exact at any count.
at::Tensor bin_counts(const at::Tensor& bin_numbers, int64_t bins) {
  constexpr int64_t kLanes = 32;
  int64_t width = bins + 1;  // the last column takes the values not counted
  int64_t rows = bin_numbers.numel() / kLanes;
  at::Tensor lane_offsets = at::arange(kLanes, bin_numbers.options()).mul_(width);
  at::Tensor by_lane = bin_numbers.narrow(0, 0, rows * kLanes).view({rows, kLanes}).add(lane_offsets).view(-1);
  at::Tensor tail = bin_numbers.narrow(0, rows * kLanes, bin_numbers.numel() - rows * kLanes);  // lane 0's
  at::Tensor counts = at::zeros({kLanes, width}, bin_numbers.options());
  at::Tensor one = at::ones({1}, bin_numbers.options());
  for (const at::Tensor& positions : {by_lane, tail})
    counts.view(-1).scatter_add_(0, positions, one.expand_as(positions));
  return counts.sum(0).narrow(0, 0, bins).to(at::kDouble);
}

/// How often each magnitude code (stored bits without the sign) occurs: one float64 count per code.
at::Tensor code_counts(const at::Tensor& values, DType dtype) {
  auto codes_count = static_cast<int64_t>(magnitude_code_count(dtype));
  at::Tensor raw = values.reshape(-1).view(dtype_bits(dtype) == 16 ? at::kShort : at::kByte);
  at::Tensor counts = at::zeros({codes_count}, values.options().dtype(at::kDouble));
  for (int64_t begin = 0; begin < raw.numel(); begin += kSlice)
    counts.add_(
        bin_counts(raw.slice(0, begin, begin + kSlice).bitwise_and(codes_count - 1).to(at::kLong), codes_count));
  return counts;
}

/// Where each statistic of an F32/F64 slice sits in its float64 summary.
enum Field {
  kNumel,
  kNans,
  kInfs,
  kZeros,
  kSumSquares,
  kMax,
  kMin,
  kAboveSeed,
  kAboveE4m3,
  kAboveE5m2,
  kAboveFp16,
  kBf16Exact,
  kFp16Exact,
  kExponents
};
constexpr int64_t kWideSummarySize = kExponents + ExponentHistogram::kBins;

/// F32 and F64: the statistics of one slice as float64 values, in Field order. Computed in the values' own
/// dtype, which holds every limit exactly, except the sum of squares (float64, as on the CPU): the whole slice in
/// float64 was slower (docs/benchmarks.md, "Figures behind the code").
at::Tensor wide_summary(const at::Tensor& values) {
  at::Tensor magnitudes = values.abs();
  at::Tensor nan = magnitudes.isnan();
  at::Tensor finite = magnitudes.isfinite();
  at::Tensor finite_or_inf = magnitudes.masked_fill(nan, 0.0);
  at::Tensor finite_only = magnitudes.masked_fill(finite.logical_not(), 0.0);
  auto as_field = [](const at::Tensor& scalar) { return scalar.to(at::kDouble).reshape({1}); };
  auto count = [&](const at::Tensor& mask) { return as_field(mask.sum()); };
  auto exact_in = [&](at::ScalarType narrow) {
    return count(magnitudes.to(narrow).to(magnitudes.scalar_type()).eq(magnitudes));
  };
  // frexp: m = f * 2^e with f in [0.5, 1), so floor(log2 m) = e - 1 and its bin e - 1 + 127. Zeros, Inf and
  // NaN are not counted.
  at::Tensor bins = std::get<1>(at::frexp(finite_only)).to(at::kLong).add(ExponentHistogram::kBias - 1);
  at::Tensor counted = finite.logical_and(magnitudes.ne(0));
  bins = bins.clamp(0, ExponentHistogram::kBins - 1).masked_fill(counted.logical_not(), ExponentHistogram::kBins);
  return at::cat({
      at::full({1}, static_cast<double>(values.numel()), values.options().dtype(at::kDouble)),
      count(nan),
      count(magnitudes.isinf()),
      count(magnitudes.eq(0.0)),
      as_field(finite_or_inf.to(at::kDouble).square().sum()),
      as_field(finite_or_inf.max()),
      as_field(magnitudes.masked_fill(nan, std::numeric_limits<double>::infinity()).min()),
      count(finite_only.gt(limits::kSeedThreshold)),
      count(finite_only.gt(limits::kE4m3Max)),
      count(finite_only.gt(limits::kE5m2Max)),
      count(finite_only.gt(limits::kFp16Max)),
      exact_in(at::kBFloat16),
      exact_in(at::kHalf),
      bin_counts(bins, ExponentHistogram::kBins),
  });
}

/// Reads one wide_summary back into statistics.
TensorStats stats_from_wide_summary(const double* summary) {
  auto count = [&](int field) { return static_cast<uint64_t>(summary[field]); };
  TensorStats stats{.numel = count(kNumel),
                    .zeros = count(kZeros),
                    .nans = count(kNans),
                    .infs = count(kInfs),
                    .sum_squares = summary[kSumSquares]};
  if (stats.has_values()) {
    stats.abs_max = summary[kMax];
    stats.abs_min = summary[kMin];
  }
  stats.above_1e2 = count(kAboveSeed);
  stats.above_e4m3_max = count(kAboveE4m3);
  stats.above_e5m2_max = count(kAboveE5m2);
  stats.above_fp16_max = count(kAboveFp16);
  stats.bf16_exact = count(kBf16Exact);
  stats.fp16_exact = count(kFp16Exact);
  stats.exactness_checked = stats.numel - stats.nans;
  for (int bin = 0; bin < ExponentHistogram::kBins; ++bin) stats.exponents.counts[bin] = count(kExponents + bin);
  return stats;
}

}  // namespace

at::Tensor torch_stats_summary(const at::Tensor& values, DType dtype) {
  if (counted_by_code(dtype)) return code_counts(values, dtype);
  at::Tensor flat = values.reshape(-1);
  std::vector<at::Tensor> slices;
  for (int64_t begin = 0; begin < flat.numel(); begin += kSlice)
    slices.push_back(wide_summary(flat.slice(0, begin, begin + kSlice)));
  return at::stack(slices);
}

TensorStats stats_from_summary(DType dtype, const at::Tensor& summary) {
  const double* values = summary.data_ptr<double>();
  if (counted_by_code(dtype)) return stats_from_code_counts(dtype, values);
  TensorStats stats;
  for (int64_t slice = 0; slice < summary.size(0); ++slice)
    stats.merge(stats_from_wide_summary(values + slice * kWideSummarySize));
  return stats;
}

TensorStats torch_tensor_stats(const at::Tensor& values, DType dtype) {
  if (values.numel() == 0) return {};
  return stats_from_summary(dtype, torch_stats_summary(values, dtype).cpu());
}

}  // namespace precdetect
