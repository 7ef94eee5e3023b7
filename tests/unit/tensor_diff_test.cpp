// Tensor comparison: the exponent histogram's exact semantics, and CPU/CUDA agreement.
#include "precdetect/diff/tensor_diff.h"

#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <gtest/gtest.h>

#include <cmath>

#include "precdetect/cuda/torch_diff.h"
#include "torch_values.h"

namespace precdetect {
namespace {

using testing::host_values;

DiffStats diff_tensors(const at::Tensor& base, const at::Tensor& other, const DiffOptions& options,
                       const ComputeDevice& device) {
  return diff_values(host_values(base), host_values(other), options, device);
}

TEST(TensorDiff, UpdateBinsArePowersOfTwo) {
  at::Tensor base = at::ones({4}, at::kDouble);
  at::Tensor other = at::tensor({1.0, 1.0 + std::ldexp(1.0, -9), 1.0 + std::ldexp(1.0, -7), 1.5}, at::kDouble);
  DiffStats stats = diff_tensors(base, other, {}, {});
  // updates 0, 2^-9, 2^-7, 0.5: bins zero, -8 ([2^-9, 2^-8)), -6, 0
  EXPECT_EQ(stats.abs_updates.zeros, 1u);
  EXPECT_EQ(stats.abs_updates.bins, (std::map<int, uint64_t>{{-8, 1}, {-6, 1}, {0, 1}}));
  EXPECT_DOUBLE_EQ(stats.abs_updates.fraction_below(-8), 0.5);  // 0 and 2^-9 lie below 2^-8
  EXPECT_DOUBLE_EQ(stats.abs_updates.fraction_below(-7), 0.5);  // 2^-7 itself is not below 2^-7
  EXPECT_DOUBLE_EQ(stats.abs_updates.percentile(25), 0.0);
  EXPECT_DOUBLE_EQ(stats.abs_updates.percentile(50), std::ldexp(1.0, -8));
  EXPECT_DOUBLE_EQ(stats.abs_updates.percentile(100), 1.0);
  // bf16's spacing at 1 is 2^-7: 1 + 2^-7 and 1.5 are bf16 values (changed), 1 + 2^-9 rounds back to 1 (unchanged)
  EXPECT_EQ(stats.changed, 2u);
}

void expect_same_diff(const DiffStats& a, const DiffStats& b) {
  EXPECT_EQ(a.numel, b.numel);
  EXPECT_EQ(a.identical, b.identical);
  EXPECT_EQ(a.changed, b.changed);
  EXPECT_EQ(a.not_close, b.not_close);
  EXPECT_EQ(a.abs_updates.bins, b.abs_updates.bins);
  EXPECT_EQ(a.abs_updates.zeros, b.abs_updates.zeros);
  EXPECT_EQ(a.rel_updates.bins, b.rel_updates.bins);
  EXPECT_EQ(a.rel_updates.zeros, b.rel_updates.zeros);
  EXPECT_EQ(a.rel_updates.total, b.rel_updates.total);
  EXPECT_EQ(a.abs_updates.total, b.abs_updates.total);
  EXPECT_EQ(a.max_abs, b.max_abs);
  EXPECT_EQ(a.max_rel, b.max_rel);
  for (auto [x, y] : {std::pair{a.sum_sq_diff, b.sum_sq_diff}, std::pair{a.dot, b.dot}, std::pair{a.sum_abs, b.sum_abs},
                      std::pair{a.sum_sq_base, b.sum_sq_base}, std::pair{a.sum_sq_other, b.sum_sq_other}}) {
    if (std::isnan(y))
      EXPECT_TRUE(std::isnan(x));  // a NaN in the data poisons the sums on both paths alike
    else
      EXPECT_NEAR(x, y, 1e-12 * std::fabs(y));
  }
}

/// A base and an update of it with the cases every statistic has to get right: zeros on one side, tiny weights,
/// NaN, Inf, -0, an update in float64's subnormal range, and a share of elements left untouched.
std::pair<at::Tensor, at::Tensor> awkward_pair(int64_t n) {
  at::manual_seed(3);
  at::Tensor base = at::randn({n}, at::kDouble);
  at::Tensor other = base.mul(at::randn({n}, at::kDouble).mul(0.01).add(1));
  if (n < 40) return {base, other};
  other.narrow(0, 30, n / 4).copy_(base.narrow(0, 30, n / 4));
  base.narrow(0, 0, 10).zero_();
  other.narrow(0, 5, 10).fill_(1e-12);
  other[20] = NAN;
  other[21] = INFINITY;
  base[22] = 1e-310;  // an update of 2e-310: float64 subnormal
  other[22] = 3e-310;
  base[23] = -0.0;
  other[24] = -0.0;
  return {base, other};
}

// The CUDA path's libtorch-ops code, run on the CPU, against the fused CPU kernel: every dtype it reads directly,
// mixed and fp8 pairs (converted), both bf16 modes, sizes that leave a tail and that split across threads.
TEST(TensorDiff, FusedPassAgreesWithLibtorchOps) {
  const std::pair<at::ScalarType, at::ScalarType> dtypes[] = {
      {at::kDouble, at::kDouble},  {at::kFloat, at::kFloat},
      {at::kHalf, at::kHalf},      {at::kBFloat16, at::kBFloat16},
      {at::kBFloat16, at::kFloat}, {at::kHalf, at::kBFloat16},
      {at::kFloat, at::kDouble},   {at::kFloat8_e4m3fn, at::kFloat8_e4m3fn}};
  for (int64_t n : {0, 1, 7, 200'003, 600'001}) {  // 600'001: two parts of at least 2^18 on 2 cores or more
    auto [base, other] = awkward_pair(n);
    for (auto [base_dtype, other_dtype] : dtypes) {
      at::Tensor a = base.to(base_dtype), b = other.to(other_dtype);
      for (bool bitwise : {false, true}) {
        SCOPED_TRACE(::testing::Message() << n << " " << base_dtype << " vs " << other_dtype << " bitwise " << bitwise);
        DiffOptions options{.bitwise = bitwise};
        expect_same_diff(diff_tensors(a, b, options, {}), diff_tensors_with_ops(a, b, options, at::kCPU));
        // a bitwise copy (the CPU path's shortcut), NaN and Inf included
        expect_same_diff(diff_tensors(b, b.clone(), options, {}),
                         diff_tensors_with_ops(b, b.clone(), options, at::kCPU));
      }
    }
  }
}

TEST(TensorDiff, CudaAgreesWithCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: the CUDA path is tested on GPU machines";
  at::Tensor base = at::randn({300'001}).to(at::kBFloat16);
  at::Tensor other = base.to(at::kFloat).mul(at::randn({300'001}).mul(0.01).add(1)).to(at::kBFloat16);
  DiffStats cpu = diff_tensors(base, other, {}, {});
  DiffStats cuda = diff_tensors(base, other, {}, {.cuda = true});
  EXPECT_EQ(cpu.changed, cuda.changed);
  EXPECT_EQ(cpu.not_close, cuda.not_close);
  EXPECT_EQ(cpu.abs_updates.bins, cuda.abs_updates.bins);
  EXPECT_EQ(cpu.max_abs, cuda.max_abs);
  EXPECT_NEAR(cpu.sum_sq_diff, cuda.sum_sq_diff, 1e-12 * cpu.sum_sq_diff);
}

}  // namespace
}  // namespace precdetect
