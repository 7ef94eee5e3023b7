// ggml's fp4 types (ggml-quants.c, dequantize_row_mxfp4/nvfp4): e2m1 codes, two to a byte, each the doubled value
// kvalues_mxfp4 gives it times its block's scale halved: MXFP4 one power of two (e8m0) per 32 values, NVFP4 one
// unsigned e4m3 per 16 of a 64-value block. Both scales are the exact floats ggml-impl.h's converters return.
#include <array>

#include "precdetect/kernel/ggml_block_bytes.h"
#include "precdetect/kernel/ggml_decoders.h"
#include "precdetect/kernel/ggml_grids.h"

namespace precdetect::ggml {
namespace {

/// ggml_e8m0_to_fp32_half: 2^(e - 128), built from its bits (2^-128 and 2^-127, subnormal, for e = 0 and 1).
float e8m0_half(uint8_t e) { return std::bit_cast<float>(e < 2 ? uint32_t{0x00200000} << e : uint32_t(e - 1) << 23); }

constexpr float power_of_two(int n) {
  float value = 1.0f;
  for (; n > 0; --n) value *= 2.0f;
  for (; n < 0; ++n) value /= 2.0f;
  return value;
}

/// ggml_ue4m3_to_fp32 for every byte: the sign bit ignored, 0 and 0x7F zero, exponent bias 7, times 0.5:
/// (1 + m/8) x 2^(e-7) x 0.5 = (8 + m) x 2^(e-11), subnormal m x 2^-9 x 0.5. Exact in float, so the table holds
/// what ggml's ldexpf returns.
constexpr std::array<float, 256> ue4m3_halves() {
  std::array<float, 256> values{};
  for (int x = 1; x < 256; ++x) {
    int exponent = (x >> 3) & 0xF, mantissa = x & 0x7;
    values[x] = exponent == 0 ? static_cast<float>(mantissa) * power_of_two(-10)
                              : static_cast<float>(8 + mantissa) * power_of_two(exponent - 11);
  }
  values[0x7F] = 0.0f;
  return values;
}
constexpr std::array<float, 256> kUe4m3Halves = ue4m3_halves();

/// 2 x `pairs` values from `pairs` bytes of codes: low nibbles first, then high ones, each kvalues_mxfp4 x scale.
inline void fp4_pairs(float scale, const std::byte* codes, int pairs, float* y) {
  for (int j = 0; j < pairs; ++j) {
    uint8_t pair = byte_at(codes, j);
    y[j] = static_cast<float>(kValuesFp4[pair & 0x0F]) * scale;
    y[j + pairs] = static_cast<float>(kValuesFp4[pair >> 4]) * scale;
  }
}

void mxfp4(const std::byte* block, float* y) { fp4_pairs(e8m0_half(byte_at(block, 0)), block + 1, 16, y); }

void nvfp4(const std::byte* block, float* y) {  // {ue4m3 d[4]; qs[32]}: four sub-blocks of 16 values
  for (int sub = 0; sub < 4; ++sub) fp4_pairs(kUe4m3Halves[byte_at(block, sub)], block + 4 + 8 * sub, 8, y + 16 * sub);
}

}  // namespace

void decode_mxfp4(const std::byte* data, uint64_t blocks, float* out) { each_block<mxfp4>(data, blocks, out, 17, 32); }
void decode_nvfp4(const std::byte* data, uint64_t blocks, float* out) { each_block<nvfp4>(data, blocks, out, 36, 64); }

}  // namespace precdetect::ggml
