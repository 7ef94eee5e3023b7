#include "precdetect/diff/tensor_diff.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/bincount.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/frexp.h>
#include <ATen/ops/maximum.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "precdetect/analyze/cpu_kernel.h"
#include "precdetect/diff/diff_kernel.h"
#include "precdetect/load/tensor_loader.h"

namespace precdetect {
namespace {

constexpr int64_t kChunk = 1 << 22;
constexpr int64_t kExponentOffset = 1100;  // frexp exponents of finite |x| > 0 lie in [-1073, 1024]

void add_histogram(UpdateHistogram& histogram, const at::Tensor& values) {
  at::Tensor zero = values.eq(0);
  histogram.zeros += static_cast<uint64_t>(zero.sum().item<int64_t>());
  histogram.total += static_cast<uint64_t>(values.numel());
  at::Tensor nonzero = values.masked_select(zero.logical_not().logical_and(values.isfinite()));
  if (nonzero.numel() == 0) return;
  // float64 subnormals share bin -1022 with [2^-1023, 2^-1022), as in the CPU kernel (docs/diff.md)
  at::Tensor exponents = std::get<1>(at::frexp(nonzero)).to(at::kLong).clamp_min(-1022).add(kExponentOffset);
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
  at::Tensor within = wb.sub(wa).abs().le(at::maximum(wa.abs(), wb.abs()).mul(options.eta));
  at::Tensor both_zero = wa.abs().lt(kBothZeroBelow).logical_and(wb.abs().lt(kBothZeroBelow));
  return within.logical_or(both_zero).logical_not();  // NaN compares false: a NaN counts as changed
}

double scalar(const at::Tensor& t) { return t.item<double>(); }

/// The chunk's statistics as libtorch ops, on whatever device the chunk lives (the CUDA path).
DiffStats diff_chunk_with_ops(const at::Tensor& a, const at::Tensor& b, const DiffOptions& options) {
  DiffStats stats{.numel = static_cast<uint64_t>(a.numel())};
  at::Tensor diff = b.sub(a), update = diff.abs(), base = a.abs();
  at::Tensor close = update.le(base.mul(options.rtol).add(options.atol));
  stats.not_close = static_cast<uint64_t>(close.logical_not().sum().item<int64_t>());
  at::Tensor finite = update.masked_select(update.isfinite());
  stats.max_abs = finite.numel() ? scalar(finite.max()) : 0.0;
  stats.sum_abs = scalar(finite.sum());
  at::Tensor relative = update.masked_select(base.ne(0)).div(base.masked_select(base.ne(0)));
  at::Tensor finite_relative = relative.masked_select(relative.isfinite());
  stats.max_rel = finite_relative.numel() ? scalar(finite_relative.max()) : 0.0;
  stats.sum_sq_diff = scalar(diff.square().sum());
  stats.sum_sq_base = scalar(a.square().sum());
  stats.sum_sq_other = scalar(b.square().sum());
  stats.dot = scalar(a.mul(b).sum());
  stats.changed = static_cast<uint64_t>(bf16_changed(a, b, options).sum().item<int64_t>());
  add_histogram(stats.abs_updates, update);
  add_histogram(stats.rel_updates, relative);
  return stats;
}

bool bitwise_equal(const at::Tensor& base, const at::Tensor& other) {
  if (base.scalar_type() != other.scalar_type()) return false;
  at::Tensor a = base.contiguous(), b = other.contiguous();
  // An empty tensor's data pointer may be null, which memcmp must not be given even for 0 bytes (UBSan).
  return a.nbytes() == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), static_cast<size_t>(a.nbytes())) == 0;
}

/// A tensor against a bitwise copy of itself, from the scan kernel's pass over one side (half the reading and a
/// fraction of the arithmetic): every update is exactly zero but at NaN and Inf, where it is NaN (Inf - Inf).
DiffStats identical_diff(const TensorStats& values, const DiffOptions& options) {
  uint64_t specials = values.nans + values.infs;
  double nan = std::numeric_limits<double>::quiet_NaN();
  DiffStats stats{.numel = values.numel, .not_close = specials};
  stats.sum_sq_diff = specials ? nan : 0.0;
  stats.sum_sq_base = stats.sum_sq_other = stats.dot = values.nans ? nan : values.sum_squares;
  stats.changed = options.bitwise ? 0 : specials;  // the eta rule calls NaN changed; equal bf16 patterns are not
  stats.abs_updates.total = values.numel;
  stats.abs_updates.zeros = values.numel - specials;
  stats.rel_updates.total = values.numel - values.zeros;  // relative updates exist where base != 0
  stats.rel_updates.zeros = values.numel - values.zeros - specials;
  return stats;
}

/// The CPU path. Bitwise-equal tensors (a lossless conversion, a frozen layer) take the scan kernel; others our
/// fused diff kernel, straight over the stored values when both sides share a dtype it reads, else (mixed dtypes,
/// fp8) chunk by chunk through two reused buffers of the wider of float32 and float64, to which every stored
/// float converts exactly.
DiffStats diff_on_cpu(const at::Tensor& base, const at::Tensor& other, const DiffOptions& options) {
  at::Tensor a = base.contiguous().reshape(-1), b = other.contiguous().reshape(-1);
  bool same_dtype = a.scalar_type() == b.scalar_type();
  auto numel = static_cast<uint64_t>(a.numel());
  if (same_dtype && bitwise_equal(a, b))
    return identical_diff(cpu_tensor_stats(a.data_ptr(), stored_dtype(a.scalar_type()), numel), options);
  DiffStats total;
  if (same_dtype && has_cpu_diff_kernel(a.scalar_type())) {
    total = cpu_diff_stats(a.data_ptr(), b.data_ptr(), a.scalar_type(), numel, options);
  } else {
    bool any_f64 = a.scalar_type() == at::kDouble || b.scalar_type() == at::kDouble;
    at::Tensor a_wide = at::empty({std::min(kChunk, a.numel())}, any_f64 ? at::kDouble : at::kFloat);
    at::Tensor b_wide = at::empty_like(a_wide);
    for (int64_t begin = 0; begin < a.numel(); begin += kChunk) {
      int64_t length = std::min(kChunk, a.numel() - begin);
      at::Tensor a_part = a_wide.narrow(0, 0, length).copy_(a.narrow(0, begin, length));
      at::Tensor b_part = b_wide.narrow(0, 0, length).copy_(b.narrow(0, begin, length));
      total.merge(cpu_diff_stats(a_part.data_ptr(), b_part.data_ptr(), a_wide.scalar_type(),
                                 static_cast<uint64_t>(length), options));
    }
  }
  total.identical = false;
  return total;
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
  if (!device.cuda) return diff_on_cpu(base, other, options);
  return diff_tensors_with_ops(base, other, options,
                               at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device.index)));
}

DiffStats diff_tensors_with_ops(const at::Tensor& base, const at::Tensor& other, const DiffOptions& options,
                                at::Device device) {
  at::Tensor a = base.reshape(-1), b = other.reshape(-1);
  DiffStats total;
  total.identical = bitwise_equal(base, other);
  // Two float64 buffers reused for every chunk: fresh ones would cost an allocation and page faults each time.
  auto options64 = at::TensorOptions().dtype(at::kDouble).device(device);
  at::Tensor a64 = at::empty({std::min(kChunk, a.numel())}, options64), b64 = at::empty_like(a64);
  for (int64_t begin = 0; begin < a.numel(); begin += kChunk) {
    int64_t length = std::min(kChunk, a.numel() - begin);
    at::Tensor a_part = a64.narrow(0, 0, length), b_part = b64.narrow(0, 0, length);
    a_part.copy_(a.narrow(0, begin, length));
    b_part.copy_(b.narrow(0, begin, length));
    DiffStats chunk = diff_chunk_with_ops(a_part, b_part, options);
    chunk.identical = total.identical;
    total.merge(chunk);
  }
  return total;
}

}  // namespace precdetect
