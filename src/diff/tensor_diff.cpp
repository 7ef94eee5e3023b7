#include "precdetect/diff/tensor_diff.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "precdetect/analyze/device_backend.h"
#include "precdetect/kernel/cpu_kernel.h"
#include "precdetect/kernel/diff_kernel.h"
#include "precdetect/kernel/widen.h"

namespace precdetect {
namespace {

constexpr uint64_t kChunk = 1 << 22;

/// Our fused diff kernel over two sides of different dtypes (or fp8): chunk by chunk through two reused buffers
/// of T.
template <typename T>
DiffStats diff_widened(const HostValues& a, const HostValues& b, const DiffOptions& options, DType wide) {
  DiffStats total;
  std::vector<T> a_wide(std::min(kChunk, a.numel())), b_wide(a_wide.size());
  for (uint64_t begin = 0; begin < a.numel(); begin += kChunk) {
    uint64_t length = std::min(kChunk, a.numel() - begin);
    widen(a, begin, length, a_wide.data());
    widen(b, begin, length, b_wide.data());
    total.merge(cpu_diff_stats(a_wide.data(), b_wide.data(), wide, length, options));
  }
  return total;
}

/// The CPU path. Bitwise-equal tensors (a lossless conversion, a frozen layer) take the scan kernel; others our
/// fused diff kernel, straight over the stored values when both sides share a dtype it reads, else widened.
DiffStats diff_on_cpu(const HostValues& a, const HostValues& b, const DiffOptions& options) {
  bool same_dtype = a.dtype() == b.dtype();
  if (same_dtype && std::ranges::equal(a.bytes(), b.bytes()))
    return identical_diff(cpu_tensor_stats(a.data(), a.dtype(), a.numel()), options);
  DiffStats total;
  if (same_dtype && has_cpu_diff_kernel(a.dtype()))
    total = cpu_diff_stats(a.data(), b.data(), a.dtype(), a.numel(), options);
  else if (a.dtype() == DType::F64 || b.dtype() == DType::F64)
    total = diff_widened<double>(a, b, options, DType::F64);
  else
    total = diff_widened<float>(a, b, options, DType::F32);
  total.identical = false;
  return total;
}

}  // namespace

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

DiffStats diff_values(const HostValues& base, const HostValues& other, const DiffOptions& options,
                      const ComputeDevice& device) {
  if (!device.cuda) return diff_on_cpu(base, other, options);
  return cuda_backend().diff(base, other, options, device.index);
}

}  // namespace precdetect
