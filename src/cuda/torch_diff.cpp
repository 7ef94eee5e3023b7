#include "precdetect/cuda/torch_diff.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/bincount.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/frexp.h>
#include <ATen/ops/maximum.h>

#include <cstring>

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

}  // namespace

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
