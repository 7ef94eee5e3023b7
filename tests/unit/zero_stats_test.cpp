// The statistics of implicit zeros (an ONNX sparse tensor's) against the CPU kernel on a real buffer of zeros.
#include "precdetect/kernel/zero_stats.h"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

#include "precdetect/kernel/cpu_kernel.h"

namespace precdetect {
namespace {

constexpr DType kFloats[] = {DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8_E4M3, DType::F8_E5M2};

TEST(ZeroStats, EqualsTheKernelOnABufferOfZeros) {
  for (DType dtype : kFloats)
    for (uint64_t count : {uint64_t{0}, uint64_t{1}, uint64_t{7}, uint64_t{300000}}) {
      std::vector<std::byte> zeros(count * static_cast<uint64_t>(dtype_bits(dtype) / 8) + 1);
      EXPECT_EQ(zero_stats(dtype, count), cpu_tensor_stats(zeros.data(), dtype, count))
          << dtype_name(dtype) << " x " << count;
    }
}

TEST(ZeroStats, CountsZerosAsExactInNarrowTypesForF32AndF64) {
  TensorStats f32 = zero_stats(DType::F32, 5);
  EXPECT_EQ(f32.zeros, 5u);
  EXPECT_EQ(f32.exactness_checked, 5u);
  EXPECT_EQ(f32.bf16_exact, 5u);
  EXPECT_EQ(f32.fp16_exact, 5u);
  EXPECT_EQ(f32.abs_min, 0.0);
  EXPECT_EQ(f32.abs_max, 0.0);
  EXPECT_EQ(zero_stats(DType::F16, 5).exactness_checked, 0u);  // a narrow dtype checks none
}

// What analysis does for a sparse tensor: its values' statistics merged with its zeros' equal the kernel's over the
// dense tensor (the sum of squares to rounding: the kernel sums in blocks).
TEST(ZeroStats, MergedWithValuesEqualsTheDenseTensor) {
  std::vector<float> values = {1.5F, -3.0F, 7e4F, 2e-40F};
  std::vector<float> dense(1000, 0.0F);
  for (size_t i = 0; i < values.size(); ++i) dense[i * 97 + 3] = values[i];
  TensorStats merged = cpu_tensor_stats(values.data(), DType::F32, values.size());
  merged.merge(zero_stats(DType::F32, dense.size() - values.size()));
  TensorStats expected = cpu_tensor_stats(dense.data(), DType::F32, dense.size());
  EXPECT_DOUBLE_EQ(merged.sum_squares, expected.sum_squares);
  merged.sum_squares = expected.sum_squares;
  EXPECT_EQ(merged, expected);
}

TEST(ZeroStats, RefusesTypesWithoutOneZeroElement) {
  EXPECT_THROW(zero_stats(DType::I64, 3), std::invalid_argument);
  EXPECT_THROW(zero_stats(DType::Q4_0, 32), std::invalid_argument);
}

}  // namespace
}  // namespace precdetect
