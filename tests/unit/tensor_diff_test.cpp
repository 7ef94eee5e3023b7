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

void expect_same_diff(const DiffStats& a, const DiffStats& b) {
  EXPECT_EQ(a.numel, b.numel);
  EXPECT_EQ(a.identical, b.identical);
  EXPECT_EQ(a.changed, b.changed);
  EXPECT_EQ(a.not_close, b.not_close);
  EXPECT_EQ(a.abs_updates.bins, b.abs_updates.bins);
  EXPECT_EQ(a.abs_updates.zeros, b.abs_updates.zeros);
  EXPECT_EQ(a.rel_updates.bins, b.rel_updates.bins);
  EXPECT_EQ(a.rel_updates.total, b.rel_updates.total);
  EXPECT_EQ(a.max_abs, b.max_abs);
  EXPECT_EQ(a.max_rel, b.max_rel);
  for (auto [x, y] :
       {std::pair{a.sum_sq_diff, b.sum_sq_diff}, std::pair{a.dot, b.dot}, std::pair{a.sum_abs, b.sum_abs}}) {
    if (std::isnan(y))
      EXPECT_TRUE(std::isnan(x));  // a NaN in the data poisons the sums on both paths alike
    else
      EXPECT_NEAR(x, y, 1e-12 * std::fabs(y));
  }
}

// The CUDA path's libtorch-ops code, run on the CPU, against the fused CPU pass: zeros, NaN, Inf, subnormal
// updates, tiny weights, and both bf16 modes.
TEST(TensorDiff, FusedPassAgreesWithLibtorchOps) {
  at::manual_seed(3);
  at::Tensor base = at::randn({200'003}, at::kDouble);
  at::Tensor other = base * (1 + at::randn({200'003}, at::kDouble) * 0.01);
  base.narrow(0, 0, 10).zero_();
  other.narrow(0, 5, 10).fill_(1e-12);
  other[20] = NAN;
  other[21] = INFINITY;
  other[22] = base[22].item<double>() + 1e-310;
  for (bool bitwise : {false, true}) {
    DiffOptions options{.bitwise = bitwise};
    expect_same_diff(diff_tensors_with_ops(base, other, options, at::kCPU, true),
                     diff_tensors_with_ops(base, other, options, at::kCPU, false));
  }
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
