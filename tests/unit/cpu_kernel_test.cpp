// The CPU kernel against independent references: libtorch's dtype conversions and long-double sums.
#include "precdetect/kernel/cpu_kernel.h"

#include <gtest/gtest.h>

#include "precdetect/analyze/cast_safety.h"
#include "stats_reference.h"

namespace precdetect {
namespace {

using testing::expect_same_stats;
using testing::random_tensor_bytes;
using testing::reference_stats;
using testing::torch_decoded;

/// Every bit pattern of a 16- or 8-bit dtype, decoded by us vs by libtorch, one element at a time.
void expect_every_pattern_decodes_like_torch(DType dtype) {
  size_t width = static_cast<size_t>(dtype_bits(dtype) / 8);
  size_t patterns = size_t{1} << (8 * width);
  std::string bytes(patterns * width, '\0');
  for (size_t code = 0; code < patterns; ++code) std::memcpy(bytes.data() + code * width, &code, width);
  std::vector<double> expected = torch_decoded(bytes, dtype);
  for (size_t code = 0; code < patterns; ++code) {
    TensorStats one = cpu_tensor_stats(bytes.data() + code * width, dtype, 1);
    if (std::isnan(expected[code])) {
      EXPECT_EQ(one.nans, 1u) << dtype_name(dtype) << " code " << code;
    } else {
      EXPECT_EQ(one.abs_max, std::fabs(expected[code])) << dtype_name(dtype) << " code " << code;
    }
  }
}

TEST(CpuKernel, Bf16DecodesEveryPatternLikeTorch) { expect_every_pattern_decodes_like_torch(DType::BF16); }
TEST(CpuKernel, F16DecodesEveryPatternLikeTorch) { expect_every_pattern_decodes_like_torch(DType::F16); }
TEST(CpuKernel, F8E4M3DecodesEveryPatternLikeTorch) { expect_every_pattern_decodes_like_torch(DType::F8_E4M3); }
TEST(CpuKernel, F8E5M2DecodesEveryPatternLikeTorch) { expect_every_pattern_decodes_like_torch(DType::F8_E5M2); }

double magnitude_of(uint32_t code, DType dtype) {
  TensorStats one = cpu_tensor_stats(&code, dtype, 1);  // little-endian: the low bytes hold the code
  return one.nans ? NAN : one.abs_max;
}

TEST(CpuKernel, FormatBoundariesFromTheirDefinitions) {
  EXPECT_EQ(magnitude_of(0x7BFF, DType::F16), 65504.0);               // fp16 max
  EXPECT_EQ(magnitude_of(0x0400, DType::F16), std::ldexp(1.0, -14));  // smallest normal
  EXPECT_EQ(magnitude_of(0x0001, DType::F16), std::ldexp(1.0, -24));  // smallest subnormal
  EXPECT_EQ(magnitude_of(0x03FF, DType::F16), 1023 * std::ldexp(1.0, -24));
  EXPECT_EQ(magnitude_of(0xFC00, DType::F16), INFINITY);
  EXPECT_TRUE(std::isnan(magnitude_of(0x7E00, DType::F16)));
  EXPECT_EQ(magnitude_of(0x7F7F, DType::BF16), 0x1.FEp127);  // bf16 max 3.3895e38
  EXPECT_EQ(magnitude_of(0x0001, DType::BF16), std::ldexp(1.0, -133));
  EXPECT_EQ(magnitude_of(0xC2C8, DType::BF16), 100.0);
  EXPECT_EQ(magnitude_of(0x7E, DType::F8_E4M3), 448.0);         // S.1111.110
  EXPECT_TRUE(std::isnan(magnitude_of(0x7F, DType::F8_E4M3)));  // S.1111.111, no Inf in E4M3
  EXPECT_EQ(magnitude_of(0x78, DType::F8_E4M3), 256.0);         // exponent 15 is a normal binade
  EXPECT_EQ(magnitude_of(0x01, DType::F8_E4M3), std::ldexp(1.0, -9));
  EXPECT_EQ(magnitude_of(0x7B, DType::F8_E5M2), 57344.0);
  EXPECT_EQ(magnitude_of(0xFC, DType::F8_E5M2), INFINITY);
  EXPECT_TRUE(std::isnan(magnitude_of(0x7D, DType::F8_E5M2)));
  EXPECT_EQ(magnitude_of(0x01, DType::F8_E5M2), std::ldexp(1.0, -16));
}

class CpuKernelRandom : public ::testing::TestWithParam<std::tuple<DType, size_t>> {};

TEST_P(CpuKernelRandom, MatchesLongDoubleReference) {
  auto [dtype, numel] = GetParam();
  std::string bytes =
      random_tensor_bytes(dtype, numel, static_cast<uint32_t>(numel) * 31 + static_cast<uint32_t>(dtype));
  TensorStats expected = reference_stats(torch_decoded(bytes, dtype), dtype);
  expect_same_stats(cpu_tensor_stats(bytes.data(), dtype, numel), expected, 1e-12);
  std::string shifted = " " + bytes;  // one byte past an aligned address, as values lie in .npz and Flax files
  expect_same_stats(cpu_tensor_stats(shifted.data() + 1, dtype, numel), expected, 1e-12);
}

// Sizes: empty, one value, a partial lane, across a block boundary, and large enough to split across threads.
INSTANTIATE_TEST_SUITE_P(AllDtypes, CpuKernelRandom,
                         ::testing::Combine(::testing::Values(DType::F64, DType::F32, DType::F16, DType::BF16,
                                                              DType::F8_E4M3, DType::F8_E5M2),
                                            ::testing::Values(0, 1, 17, 16385, 3'000'001)),
                         [](const auto& info) {
                           return std::string(dtype_name(std::get<0>(info.param))) + "_" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(CpuKernel, AllNanTensorHasNoValues) {
  std::vector<float> values(100, NAN);
  TensorStats stats = cpu_tensor_stats(values.data(), DType::F32, values.size());
  EXPECT_FALSE(stats.has_values());
  EXPECT_EQ(stats.nans, 100u);
  EXPECT_EQ(stats.norm(), 0.0);
}

// PyTorch's float32 CPU norm drifts by ~1.6% on 131M elements; ours must hold 1e-9 relative at scale.
TEST(CpuKernel, NormOfLargeTensorMatchesFloat64ToOneInABillion) {
  constexpr size_t kNumel = size_t{1} << 25;
  std::vector<float> values(kNumel);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(0.5f, 1.5f);
  long double squares = 0;
  for (float& v : values) {
    v = uniform(rng);
    squares += static_cast<long double>(v) * v;
  }
  double expected = std::sqrt(static_cast<double>(squares));
  double actual = cpu_tensor_stats(values.data(), DType::F32, kNumel).norm();
  EXPECT_NEAR(actual, expected, 1e-9 * expected);
}

TEST(CpuKernel, RejectsNonFloatingDtypes) {
  int32_t value = 1;
  EXPECT_THROW(cpu_tensor_stats(&value, DType::I32, 1), std::invalid_argument);
}

}  // namespace
}  // namespace precdetect

namespace precdetect {
namespace {

// Each narrow-format boundary, on both sides, with the counts worked out by hand from the definitions.
const std::vector<float> kBoundaryValues = {65504.0f,    std::nextafter(65504.0f, INFINITY),
                                            65520.0f,    -65536.0f,  // fp16 max, above, rounds to Inf, 2^16
                                            448.0f,      std::nextafter(448.0f, INFINITY),
                                            57344.0f,    -std::nextafter(57344.0f, INFINITY),  // fp8 maxima
                                            100.0f,      std::nextafter(100.0f, INFINITY),
                                            256.0f,      255.0f,  // seed, 2^8
                                            0x1p-24f,    -0x1p-25f,
                                            0x1.8p-24f,  0x1p-14f,
                                            0x1p-15f,    1023 * 0x1p-24f,
                                            1e-45f,  // fp16 small end
                                            0.0f,        -INFINITY,
                                            NAN,         1 + 0x1p-10f,
                                            1 + 0x1p-7f, -(1 + 0x1p-11f)};  // precision

void expect_boundary_counts(const TensorStats& stats, uint64_t copies) {
  EXPECT_EQ(stats.above_1e2, 11 * copies);  // every value above 100 but Inf: 100 itself is not
  EXPECT_EQ(stats.above_e4m3_max, 7 * copies);
  EXPECT_EQ(stats.above_e5m2_max, 5 * copies);
  EXPECT_EQ(stats.above_fp16_max, 3 * copies);
  // fp16: 65504 448 57344 100 256 255 2^-24 2^-14 2^-15 1023*2^-24 0 Inf 1+2^-10 1+2^-7
  EXPECT_EQ(stats.fp16_exact, 14 * copies);
  // bf16: 2^16 448 57344 100 256 255 2^-24 2^-25 1.5*2^-24 2^-14 2^-15 0 Inf 1+2^-7
  EXPECT_EQ(stats.bf16_exact, 14 * copies);
  FormatFit fp16 = format_fit(stats, kNarrowFormats[0]);
  EXPECT_EQ(fp16.overflow, 3 * copies);
  EXPECT_EQ(fp16.underflow, 2 * copies);          // 2^-25, 1e-45
  EXPECT_EQ(fp16.subnormal, 4 * copies);          // 2^-24, 1.5*2^-24, 2^-15, 1023*2^-24
  EXPECT_EQ(square_overflow(stats), 9 * copies);  // 256 and up (255 is not), Inf excluded
  FormatFit e4m3 = format_fit(stats, kNarrowFormats[1]);
  EXPECT_EQ(e4m3.underflow, 7 * copies);  // the seven nonzero values below 2^-9
  EXPECT_EQ(e4m3.subnormal, 0u);
}

TEST(CpuKernel, CountsAtNarrowFormatBoundaries) {
  std::vector<float> values;
  for (int copy = 0; copy < 3; ++copy) values.insert(values.end(), kBoundaryValues.begin(), kBoundaryValues.end());
  // 75 values: 72 through the vector path, 3 through the scalar tail.
  {
    SCOPED_TRACE("F32");
    expect_boundary_counts(cpu_tensor_stats(values.data(), DType::F32, values.size()), 3);
  }
  std::vector<double> wide(values.begin(), values.end());
  SCOPED_TRACE("F64");
  expect_boundary_counts(cpu_tensor_stats(wide.data(), DType::F64, wide.size()), 3);
}

TEST(CpuKernel, ExponentBinsOfF64ExtremesClampToTheEndBins) {
  std::vector<double> values = {1e300, 0x1p128, 0x1p127, 1e-300, 0x1p-126, 0x1p-127};
  TensorStats stats = cpu_tensor_stats(values.data(), DType::F64, values.size());
  EXPECT_EQ(stats.exponents.counts[255], 2u);
  EXPECT_EQ(stats.exponents.counts[254], 1u);
  EXPECT_EQ(stats.exponents.counts[1], 1u);
  EXPECT_EQ(stats.exponents.counts[0], 2u);
}

}  // namespace
}  // namespace precdetect
