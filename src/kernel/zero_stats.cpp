#include "precdetect/kernel/zero_stats.h"

#include <array>
#include <stdexcept>

#include "precdetect/kernel/cpu_kernel.h"

namespace precdetect {

TensorStats zero_stats(DType dtype, uint64_t count) {
  if (dtype_kind(dtype) != DTypeKind::kFloat) throw std::invalid_argument("zero_stats: not a floating dtype");
  if (count == 0) return {};
  // Every floating dtype's zero is all zero bits, and none is wider than 16 bytes (C64: two floats).
  std::array<std::byte, 16> zero{};
  // The kernel's own verdict on one zero (which counts it as exact in bf16 and fp16, which bin it is not in), so
  // the closed form cannot drift from what the kernel gives for a buffer of zeros.
  TensorStats one = cpu_tensor_stats(zero.data(), dtype, 1);
  TensorStats stats = one;
  stats.numel = one.numel * count;
  stats.zeros = one.zeros * count;
  stats.nans = one.nans * count;
  stats.infs = one.infs * count;
  stats.sum_squares = one.sum_squares * static_cast<double>(count);
  stats.above_1e2 = one.above_1e2 * count;
  stats.above_e4m3_max = one.above_e4m3_max * count;
  stats.above_e5m2_max = one.above_e5m2_max * count;
  stats.above_fp16_max = one.above_fp16_max * count;
  stats.bf16_exact = one.bf16_exact * count;
  stats.fp16_exact = one.fp16_exact * count;
  stats.exactness_checked = one.exactness_checked * count;
  for (uint64_t& bin : stats.exponents.counts) bin *= count;
  return stats;
}

}  // namespace precdetect
