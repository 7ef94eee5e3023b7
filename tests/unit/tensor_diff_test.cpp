// Tensor comparison: the exponent histogram's exact semantics, and CPU/CUDA agreement.
#include "precdetect/diff/tensor_diff.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cmath>

namespace precdetect {
namespace {

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

TEST(TensorDiff, CudaAgreesWithCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: the CUDA path is tested on GPU machines";
  at::Tensor base = at::randn({300'001}).to(at::kBFloat16);
  at::Tensor other = (base.to(at::kFloat) * (1 + 0.01 * at::randn({300'001}))).to(at::kBFloat16);
  DiffStats cpu = diff_tensors(base, other, {}, {}), cuda = diff_tensors(base, other, {}, {.cuda = true});
  EXPECT_EQ(cpu.changed, cuda.changed);
  EXPECT_EQ(cpu.not_close, cuda.not_close);
  EXPECT_EQ(cpu.abs_updates.bins, cuda.abs_updates.bins);
  EXPECT_EQ(cpu.max_abs, cuda.max_abs);
  EXPECT_NEAR(cpu.sum_sq_diff, cuda.sum_sq_diff, 1e-12 * cpu.sum_sq_diff);
}

}  // namespace
}  // namespace precdetect
