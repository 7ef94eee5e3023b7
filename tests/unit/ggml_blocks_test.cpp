// ggml's block decoders: each one the DType table calls block-quantized, writing exactly its blocks' values, and
// a few blocks worked out by hand from ggml-common.h's layouts. Every value of every type against ggml's own
// to_float and gguf-py's dequantize: tests/e2e/test_ggml_types.py.
#include "precdetect/kernel/ggml_blocks.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

namespace precdetect {
namespace {

constexpr float kCanary = -12345.0f;

std::vector<DType> block_quantized_dtypes() {
  std::vector<DType> dtypes;
  for (int i = 0; i <= static_cast<int>(DType::Q2_0); ++i)
    if (dtype_kind(static_cast<DType>(i)) == DTypeKind::kQuantized) dtypes.push_back(static_cast<DType>(i));
  return dtypes;
}

TEST(GgmlBlocks, EveryBlockQuantizedDtypeDecodesExactlyItsValues) {
  std::vector<DType> dtypes = block_quantized_dtypes();
  EXPECT_EQ(dtypes.size(), 25u);  // ggml.h's types with a to_float that GGUF files hold, Q8_1 and Q8_K aside
  for (DType dtype : dtypes) {
    const uint64_t values = dtype_block_values(dtype), blocks = 3;
    std::vector<std::byte> bytes(*dtype_bytes(dtype, blocks * values));  // exactly three blocks: ASan sees overreads
    std::vector<float> out(blocks * values + 1, kCanary);
    dequantize_blocks(dtype, bytes.data(), blocks, out.data());
    EXPECT_EQ(out.back(), kCanary) << dtype_name(dtype);  // wrote no more than its values
    for (uint64_t i = 0; i < blocks * values; ++i)
      ASSERT_NE(out[i], kCanary) << dtype_name(dtype) << " value " << i;  // and every one of them
  }
  EXPECT_THROW(dequantize_blocks(DType::Q8_K, nullptr, 0, nullptr), std::invalid_argument);
}

std::vector<std::byte> block(std::initializer_list<int> bytes, size_t size) {
  std::vector<std::byte> out(size);
  size_t i = 0;
  for (int b : bytes) out[i++] = static_cast<std::byte>(b);
  return out;
}

std::vector<float> decoded(DType dtype, const std::vector<std::byte>& bytes) {
  std::vector<float> out(dtype_block_values(dtype));
  dequantize_blocks(dtype, bytes.data(), 1, out.data());
  return out;
}

// fp16 1.0 is 0x3C00, 0.5 is 0x3800 (little-endian: low byte first).

TEST(GgmlBlocks, Q1AndQ2CodesAreSignsAndSmallIntegersTimesD) {
  auto q1 = decoded(DType::Q1_0, block({0x00, 0x38, 0b00000101}, 18));  // d 0.5; bits 0 and 2 set
  EXPECT_EQ(q1[0], 0.5f);
  EXPECT_EQ(q1[1], -0.5f);
  EXPECT_EQ(q1[2], 0.5f);
  EXPECT_EQ(q1[127], -0.5f);
  auto q2 = decoded(DType::Q2_0, block({0x00, 0x3C, 0b11100100}, 18));  // d 1; codes 0, 1, 2, 3 -> q - 1
  EXPECT_EQ(std::vector<float>(q2.begin(), q2.begin() + 5), (std::vector<float>{-1, 0, 1, 2, -1}));
}

TEST(GgmlBlocks, TernaryCodesAreBaseThreeDigitsTimesD) {
  // TQ1_0: a byte of qs holds five values' trits as the fixed-point fraction q/256, one value in each run of 32:
  // 255 is five 2s (the quantizer's (242 x 256 + 242) / 243), +d each; 0 is five 0s, -d each.
  std::vector<std::byte> tq1 = block({255}, 54);
  tq1[52] = std::byte{0x00}, tq1[53] = std::byte{0x3C};  // d = 1 at the end of the block
  auto values = decoded(DType::TQ1_0, tq1);
  for (int run = 0; run < 5; ++run) {
    EXPECT_EQ(values[32 * run], 1.0f) << run;  // value 0 of each run of 32 reads byte 0
    EXPECT_EQ(values[32 * run + 1], -1.0f) << run;
  }
  std::vector<std::byte> tq2 = block({0b11100100}, 66);  // codes 0, 1, 2, 3 in byte 0: values 0, 32, 64, 96
  tq2[64] = std::byte{0x00}, tq2[65] = std::byte{0x38};
  auto two = decoded(DType::TQ2_0, tq2);
  EXPECT_EQ(two[0], -0.5f);
  EXPECT_EQ(two[32], 0.0f);
  EXPECT_EQ(two[64], 0.5f);
  EXPECT_EQ(two[96], 1.0f);
}

TEST(GgmlBlocks, Fp4CodesTimesTheirScales) {
  // MXFP4: e8m0 127 is 2^0; code 7 is e2m1's 6, code 0xF is -6; value j from the low nibble of byte j, j + 16 high.
  auto mx = decoded(DType::MXFP4, block({127, 0xF7}, 17));
  EXPECT_EQ(mx[0], 6.0f);
  EXPECT_EQ(mx[16], -6.0f);
  EXPECT_EQ(mx[1], 0.0f);
  // NVFP4: unsigned e4m3 0x38 is 1.0 (bias 7), 0x7F is read as 0 (ggml_ue4m3_to_fp32), 0xB8 as 0x38 (no sign).
  auto nv = decoded(DType::NVFP4, block({0x38, 0x7F, 0xB8, 0x01, 0x05, 0, 0, 0, 0, 0, 0, 0, 0x05}, 36));
  EXPECT_EQ(nv[0], 3.0f);   // code 5: e2m1 3.0 x 1.0
  EXPECT_EQ(nv[16], 0.0f);  // sub-block 1's scale: 0x7F
  EXPECT_EQ(nv[32], 0.0f);  // sub-block 2's code 0
  EXPECT_EQ(nv[48], 0.0f);
  std::vector<std::byte> third = block({0x00, 0x00, 0xB8, 0x01}, 36);
  third[4 + 16] = std::byte{0x07};  // sub-block 2, value 0: code 7 (6.0) x 1.0
  third[4 + 24] = std::byte{0x01};  // sub-block 3, value 0: code 1 (0.5) x the subnormal 2^-9
  auto signless = decoded(DType::NVFP4, third);
  EXPECT_EQ(signless[32], 6.0f);
  EXPECT_EQ(signless[48], 0.5f * std::ldexp(1.0f, -9));
}

TEST(GgmlBlocks, Iq4CodesAreNonLinearLevelsTimesD) {
  auto nl = decoded(DType::IQ4_NL, block({0x00, 0x3C, 0xF0}, 18));  // d 1; codes 0 (low) and 15 (high)
  EXPECT_EQ(nl[0], -127.0f);
  EXPECT_EQ(nl[16], 113.0f);
}

}  // namespace
}  // namespace precdetect
