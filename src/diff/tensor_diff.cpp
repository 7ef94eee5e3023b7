#include "precdetect/diff/tensor_diff.h"

#include <ATen/ATen.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

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

/// The chunk's statistics as libtorch ops, on whatever device the chunk lives (the CUDA path).
DiffStats diff_chunk_with_ops(const at::Tensor& a, const at::Tensor& b, const DiffOptions& options) {
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

// ---- The fused CPU pass: one loop over the chunk's float64 values computes every statistic. ----

/// c10's float -> bf16 rounding (round to nearest even, NaN kept), after the same double -> float step as
/// libtorch's `.to(kBFloat16)`, so both paths agree bit for bit.
uint16_t to_bf16_bits(double value) {
  auto bits = std::bit_cast<uint32_t>(static_cast<float>(value));
  if (std::isnan(value)) return 0x7FC0;
  return static_cast<uint16_t>((bits + ((bits >> 16) & 1) + 0x7FFF) >> 16);
}
double from_bf16_bits(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

/// Histogram bins by frexp exponent, read from the float64 bits (frexp itself for subnormals).
struct ExponentCounts {
  std::vector<uint64_t> bins = std::vector<uint64_t>(2 * kExponentOffset + 2);
  uint64_t zeros = 0, total = 0;
  void add(double x) {
    ++total;
    if (x == 0) return void(++zeros);
    if (!std::isfinite(x)) return;
    uint64_t biased = (std::bit_cast<uint64_t>(x) >> 52) & 0x7FF;
    int exponent = 0;
    if (biased == 0)
      std::frexp(x, &exponent);
    else
      exponent = static_cast<int>(biased) - 1022;
    ++bins[static_cast<size_t>(exponent + kExponentOffset)];
  }
  void flush_into(UpdateHistogram& histogram) const {
    for (size_t bin = 0; bin < bins.size(); ++bin)
      if (bins[bin]) histogram.bins[static_cast<int>(bin) - static_cast<int>(kExponentOffset)] += bins[bin];
    histogram.zeros += zeros;
    histogram.total += total;
  }
};

bool bf16_element_changed(double a, double b, const DiffOptions& options) {
  uint16_t a16 = to_bf16_bits(a), b16 = to_bf16_bits(b);
  if (options.bitwise) return ((a16 & 0x7FFF) ? a16 : 0) != ((b16 & 0x7FFF) ? b16 : 0);  // +0 == -0
  double wa = from_bf16_bits(a16), wb = from_bf16_bits(b16);
  bool within = std::fabs(wb - wa) <= options.eta * std::max(std::fabs(wa), std::fabs(wb));
  bool both_zero = std::fabs(wa) < kBothZero && std::fabs(wb) < kBothZero;
  return !(within || both_zero);  // NaN compares false: a NaN counts as changed
}

DiffStats diff_chunk_fused(const double* a, const double* b, int64_t n, const DiffOptions& options) {
  DiffStats stats{.numel = static_cast<uint64_t>(n)};
  ExponentCounts abs_updates, rel_updates;
  for (int64_t i = 0; i < n; ++i) {
    double diff = b[i] - a[i], update = std::fabs(diff), base = std::fabs(a[i]);
    stats.not_close += !(update <= options.atol + options.rtol * base);
    if (std::isfinite(update)) {
      stats.max_abs = std::max(stats.max_abs, update);
      stats.sum_abs += update;
    }
    stats.sum_sq_diff += diff * diff;
    stats.sum_sq_base += a[i] * a[i];
    stats.sum_sq_other += b[i] * b[i];
    stats.dot += a[i] * b[i];
    stats.changed += bf16_element_changed(a[i], b[i], options);
    abs_updates.add(update);
    if (base != 0) {
      double relative = update / base;
      rel_updates.add(relative);
      if (std::isfinite(relative)) stats.max_rel = std::max(stats.max_rel, relative);
    }
  }
  abs_updates.flush_into(stats.abs_updates);
  rel_updates.flush_into(stats.rel_updates);
  return stats;
}

/// The fused pass split across the machine's threads.
DiffStats diff_chunk_fused_parallel(const double* a, const double* b, int64_t n, const DiffOptions& options) {
  int64_t threads = std::max<int64_t>(1, std::min<int64_t>(std::thread::hardware_concurrency(), n >> 16));
  int64_t part = (n + threads - 1) / threads;
  std::vector<std::future<DiffStats>> parts;
  for (int64_t begin = part; begin < n; begin += part)
    parts.push_back(std::async(std::launch::async, diff_chunk_fused, a + begin, b + begin, std::min(part, n - begin),
                               std::cref(options)));
  DiffStats stats = diff_chunk_fused(a, b, std::min(part, n), options);
  for (auto& result : parts) stats.merge(result.get());
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
  if (!device.cuda) return diff_tensors_with_ops(base, other, options, at::kCPU, /*fused=*/true);
  return diff_tensors_with_ops(base, other, options, at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device.index)),
                               /*fused=*/false);
}

DiffStats diff_tensors_with_ops(const at::Tensor& base, const at::Tensor& other, const DiffOptions& options,
                                at::Device device, bool fused) {
  at::Tensor a = base.reshape(-1), b = other.reshape(-1);
  DiffStats total;
  total.identical = bitwise_equal(base, other);
  // Two float64 buffers reused for every chunk: fresh ones would cost a page fault per 4 KiB each time.
  auto options64 = at::TensorOptions().dtype(at::kDouble).device(device);
  at::Tensor a64 = at::empty({std::min(kChunk, a.numel())}, options64), b64 = at::empty_like(a64);
  for (int64_t begin = 0; begin < a.numel(); begin += kChunk) {
    int64_t length = std::min(kChunk, a.numel() - begin);
    at::Tensor a_part = a64.narrow(0, 0, length), b_part = b64.narrow(0, 0, length);
    a_part.copy_(a.narrow(0, begin, length));
    b_part.copy_(b.narrow(0, begin, length));
    DiffStats chunk =
        fused ? diff_chunk_fused_parallel(a_part.data_ptr<double>(), b_part.data_ptr<double>(), length, options)
              : diff_chunk_with_ops(a_part, b_part, options);
    chunk.identical = total.identical;
    total.merge(chunk);
  }
  return total;
}

}  // namespace precdetect
