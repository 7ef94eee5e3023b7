#include "precdetect/diff/tensor_diff.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstring>

namespace precdetect {
namespace {

constexpr int64_t kChunk = 1 << 22;
constexpr int64_t kExponentOffset = 1100;  // float64 exponents of |x| > 0 lie in [-1073, 1024]
// seed 004: weights below this in both checkpoints count as unchanged whatever their ratio
constexpr double kBothZero = 1e-10;

void add_histogram(UpdateHistogram& histogram, const at::Tensor& values) {
  at::Tensor zero = values.eq(0);
  histogram.zeros += static_cast<uint64_t>(zero.sum().item<int64_t>());
  histogram.total += static_cast<uint64_t>(values.numel());
  at::Tensor nonzero = values.masked_select(zero.logical_not().logical_and(values.isfinite()));
  if (nonzero.numel() == 0) return;
  at::Tensor exponents = std::get<1>(at::frexp(nonzero)).to(at::kLong) + kExponentOffset;
  at::Tensor counts = at::bincount(exponents).cpu();
  const int64_t* count = counts.data_ptr<int64_t>();
  for (int64_t bin = 0; bin < counts.numel(); ++bin)
    if (count[bin]) histogram.bins[static_cast<int>(bin - kExponentOffset)] += static_cast<uint64_t>(count[bin]);
}

/// bf16-aware equality (seed 004): both values cast to bf16; equal when relatively within eta, or both ~0.
at::Tensor bf16_changed(const at::Tensor& a, const at::Tensor& b, const DiffOptions& options) {
  at::Tensor a16 = a.to(at::kBFloat16), b16 = b.to(at::kBFloat16);
  if (options.bitwise) {  // canonical zero: +0 and -0 are the same weight
    at::Tensor a_bits = a16.view(at::kShort).masked_fill(a16.eq(0), 0);
    at::Tensor b_bits = b16.view(at::kShort).masked_fill(b16.eq(0), 0);
    return a_bits.ne(b_bits);
  }
  at::Tensor wa = a16.to(at::kDouble), wb = b16.to(at::kDouble);
  at::Tensor within = (wb - wa).abs().le(options.eta * at::maximum(wa.abs(), wb.abs()));
  at::Tensor both_zero = wa.abs().lt(kBothZero).logical_and(wb.abs().lt(kBothZero));
  return within.logical_or(both_zero).logical_not();  // NaN compares false: a NaN counts as changed
}

double scalar(const at::Tensor& t) { return t.item<double>(); }

DiffStats diff_chunk(const at::Tensor& a, const at::Tensor& b, const DiffOptions& options) {
  DiffStats stats{.numel = static_cast<uint64_t>(a.numel())};
  at::Tensor diff = b - a, update = diff.abs(), base = a.abs();
  at::Tensor close = update.le(options.atol + options.rtol * base);
  stats.not_close = static_cast<uint64_t>(close.logical_not().sum().item<int64_t>());
  at::Tensor finite = update.masked_select(update.isfinite());
  stats.max_abs = finite.numel() ? scalar(finite.max()) : 0.0;
  stats.sum_abs = scalar(finite.sum());
  at::Tensor relative = update.masked_select(base.ne(0)) / base.masked_select(base.ne(0));
  at::Tensor finite_relative = relative.masked_select(relative.isfinite());
  stats.max_rel = finite_relative.numel() ? scalar(finite_relative.max()) : 0.0;
  stats.sum_sq_diff = scalar(diff.square().sum());
  stats.sum_sq_base = scalar(a.square().sum());
  stats.sum_sq_other = scalar(b.square().sum());
  stats.dot = scalar((a * b).sum());
  stats.changed = static_cast<uint64_t>(bf16_changed(a, b, options).sum().item<int64_t>());
  add_histogram(stats.abs_updates, update);
  add_histogram(stats.rel_updates, relative);
  return stats;
}

bool bitwise_equal(const at::Tensor& base, const at::Tensor& other) {
  if (base.scalar_type() != other.scalar_type()) return false;
  at::Tensor a = base.contiguous(), b = other.contiguous();
  return std::memcmp(a.data_ptr(), b.data_ptr(), static_cast<size_t>(a.nbytes())) == 0;
}

}  // namespace

void UpdateHistogram::merge(const UpdateHistogram& other) {
  for (const auto& [bin, count] : other.bins) bins[bin] += count;
  zeros += other.zeros;
  total += other.total;
}

double UpdateHistogram::percentile(double p) const {
  auto rank = static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(total)));
  if (rank <= zeros) return 0.0;
  uint64_t seen = zeros;
  for (const auto& [bin, count] : bins) {
    seen += count;
    if (seen >= rank) return std::ldexp(1.0, bin);
  }
  return bins.empty() ? 0.0 : std::ldexp(1.0, bins.rbegin()->first);
}

double UpdateHistogram::fraction_below(int exponent) const {
  if (total == 0) return 0.0;
  uint64_t below = zeros;
  for (const auto& [bin, count] : bins)
    if (bin <= exponent) below += count;  // bin e holds [2^(e-1), 2^e): all below 2^exponent when e <= exponent
  return static_cast<double>(below) / static_cast<double>(total);
}

void DiffStats::merge(const DiffStats& other) {
  numel += other.numel;
  identical = identical && other.identical;
  not_close += other.not_close;
  max_abs = std::max(max_abs, other.max_abs);
  sum_abs += other.sum_abs;
  max_rel = std::max(max_rel, other.max_rel);
  sum_sq_diff += other.sum_sq_diff;
  sum_sq_base += other.sum_sq_base;
  sum_sq_other += other.sum_sq_other;
  dot += other.dot;
  changed += other.changed;
  abs_updates.merge(other.abs_updates);
  rel_updates.merge(other.rel_updates);
}

DiffStats diff_tensors(const at::Tensor& base, const at::Tensor& other, const DiffOptions& options,
                       const ComputeDevice& device) {
  at::Device target = device.cuda ? at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device.index)) : at::kCPU;
  at::Tensor a = base.reshape(-1), b = other.reshape(-1);
  DiffStats total;
  total.identical = bitwise_equal(base, other);
  for (int64_t begin = 0; begin < a.numel(); begin += kChunk) {
    int64_t length = std::min(kChunk, a.numel() - begin);
    DiffStats chunk = diff_chunk(a.narrow(0, begin, length).to(target).to(at::kDouble),
                                 b.narrow(0, begin, length).to(target).to(at::kDouble), options);
    chunk.identical = total.identical;
    total.merge(chunk);
  }
  return total;
}

}  // namespace precdetect
