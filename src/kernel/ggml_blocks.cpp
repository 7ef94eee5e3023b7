#include "precdetect/kernel/ggml_blocks.h"

#include <array>
#include <bit>
#include <cstring>
#include <stdexcept>

namespace precdetect {
namespace {

constexpr int kSuperBlock = 256;  // ggml's QK_K: the values of one K-quant block

/// The fp16 value at `at`, exactly as GGML_FP16_TO_FP32 gives it (one per block: cheap bit moves, not a library
/// conversion).
float half_at(const std::byte* at) {
  uint16_t half;
  std::memcpy(&half, at, 2);
  uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16, exponent = (half >> 10) & 0x1Fu,
           mantissa = half & 0x3FFu;
  if (exponent == 0) {  // zero or subnormal: mantissa x 2^-24, exact in float
    float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  uint32_t bits = sign | (exponent == 0x1F ? 0x7F800000u : (exponent + 112) << 23) | (mantissa << 13);
  return std::bit_cast<float>(bits);
}

uint8_t byte_at(const std::byte* at, size_t i) { return static_cast<uint8_t>(at[i]); }

// The 32-value types: a scale d (and a minimum m), then the low four bits of each value, two per byte (value j in
// the low half of byte j, value j + 16 in the high half), and for Q5 a 32-bit word of fifth bits.

void q4_0(const std::byte* block, float* y) {  // {fp16 d; qs[16]}: (q - 8) * d
  float d = half_at(block);
  for (int j = 0; j < 16; ++j) {
    uint8_t q = byte_at(block, 2 + j);
    y[j] = static_cast<float>((q & 0x0F) - 8) * d;
    y[j + 16] = static_cast<float>((q >> 4) - 8) * d;
  }
}

void q4_1(const std::byte* block, float* y) {  // {fp16 d, m; qs[16]}: q * d + m
  float d = half_at(block), m = half_at(block + 2);
  for (int j = 0; j < 16; ++j) {
    uint8_t q = byte_at(block, 4 + j);
    y[j] = static_cast<float>(q & 0x0F) * d + m;
    y[j + 16] = static_cast<float>(q >> 4) * d + m;
  }
}

uint32_t fifth_bits(const std::byte* at) {
  uint32_t bits;
  std::memcpy(&bits, at, 4);
  return bits;
}

void q5_0(const std::byte* block, float* y) {  // {fp16 d; qh[4]; qs[16]}: (q - 16) * d
  float d = half_at(block);
  uint32_t high = fifth_bits(block + 2);
  for (int j = 0; j < 16; ++j) {
    uint8_t q = byte_at(block, 6 + j);
    int low = (q & 0x0F) | static_cast<int>(((high >> j) & 1) << 4);
    int up = (q >> 4) | static_cast<int>(((high >> (j + 16)) & 1) << 4);
    y[j] = static_cast<float>(low - 16) * d;
    y[j + 16] = static_cast<float>(up - 16) * d;
  }
}

void q5_1(const std::byte* block, float* y) {  // {fp16 d, m; qh[4]; qs[16]}: q * d + m
  float d = half_at(block), m = half_at(block + 2);
  uint32_t high = fifth_bits(block + 4);
  for (int j = 0; j < 16; ++j) {
    uint8_t q = byte_at(block, 8 + j);
    int low = (q & 0x0F) | static_cast<int>(((high >> j) & 1) << 4);
    int up = (q >> 4) | static_cast<int>(((high >> (j + 16)) & 1) << 4);
    y[j] = static_cast<float>(low) * d + m;
    y[j + 16] = static_cast<float>(up) * d + m;
  }
}

void q8_0(const std::byte* block, float* y) {  // {fp16 d; int8 qs[32]}: q * d
  float d = half_at(block);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(byte_at(block, 2 + j))) * d;
}

// The K-quants: 256 values in sub-blocks of 16 or 32, each with its own scale (and minimum) packed in 4 to 8 bits
// and multiplied by the block's fp16 d (and dmin).

void q2_k(const std::byte* block, float* y) {  // {scales[16]; qs[64]; fp16 d, dmin}: d*sc * q - dmin*m
  const std::byte* qs = block + 16;
  float d = half_at(block + 80), dmin = half_at(block + 82);
  for (int sub = 0; sub < 16; ++sub) {  // sub-block `sub` holds values 16*sub..: two bits of qs at shift 2*(sub/2 % 4)
    uint8_t scale = byte_at(block, sub);
    float dl = d * static_cast<float>(scale & 0x0F), ml = dmin * static_cast<float>(scale >> 4);
    int half = sub / 8, shift = 2 * ((sub % 8) / 2), offset = 32 * half + 16 * (sub % 2);
    for (int l = 0; l < 16; ++l) y[16 * sub + l] = dl * static_cast<float>((byte_at(qs, offset + l) >> shift) & 3) - ml;
  }
}

/// Q3_K's sixteen 6-bit scales, signed (-32..31): low four bits from bytes 0-7, high two from bytes 8-11.
std::array<int, 16> q3_k_scales(const std::byte* packed) {
  std::array<int, 16> scales;
  for (int j = 0; j < 16; ++j) {
    int low = (byte_at(packed, j % 8) >> (4 * (j / 8))) & 0x0F;
    int high = (byte_at(packed, 8 + j % 4) >> (2 * (j / 4))) & 0x03;
    scales[j] = (low | (high << 4)) - 32;
  }
  return scales;
}

void q3_k(const std::byte* block, float* y) {  // {hmask[32]; qs[64]; scales[12]; fp16 d}: d*sc * (q - 4*!h)
  const std::byte* hmask = block;
  const std::byte* qs = block + 32;
  std::array<int, 16> scales = q3_k_scales(block + 96);
  float d = half_at(block + 108);
  for (int sub = 0; sub < 16; ++sub) {
    float dl = d * static_cast<float>(scales[sub]);
    int half = sub / 8, shift = 2 * ((sub % 8) / 2), offset = 32 * half + 16 * (sub % 2), bit = sub / 2;
    for (int l = 0; l < 16; ++l) {
      int low = (byte_at(qs, offset + l) >> shift) & 3;
      int high_clear = ((byte_at(hmask, 16 * (sub % 2) + l) >> bit) & 1) ^ 1;
      y[16 * sub + l] = dl * static_cast<float>(low - 4 * high_clear);
    }
  }
}

/// Q4_K's and Q5_K's eight 6-bit scales and minimums (ggml's get_scale_min_k4).
void scale_min_k4(const std::byte* packed, int j, int& scale, int& min) {
  if (j < 4) {
    scale = byte_at(packed, j) & 63;
    min = byte_at(packed, j + 4) & 63;
  } else {
    scale = (byte_at(packed, j + 4) & 0x0F) | ((byte_at(packed, j - 4) >> 6) << 4);
    min = (byte_at(packed, j + 4) >> 4) | ((byte_at(packed, j) >> 6) << 4);
  }
}

/// Q4_K {fp16 d, dmin; scales[12]; qs[128]} and Q5_K (qh[32] before qs): d*sc * q - dmin*m per 32 values.
void q45_k(const std::byte* block, float* y, bool fifth_bit) {
  float d = half_at(block), dmin = half_at(block + 2);
  const std::byte* qh = block + 16;
  const std::byte* qs = block + (fifth_bit ? 48 : 16);
  for (int sub = 0; sub < 8; ++sub) {  // values 32*sub..: low or high nibbles of qs[32*(sub/2) ..]
    int scale, min;
    scale_min_k4(block + 4, sub, scale, min);
    float dl = d * static_cast<float>(scale), ml = dmin * static_cast<float>(min);
    int shift = 4 * (sub % 2);
    for (int l = 0; l < 32; ++l) {
      int q = (byte_at(qs, 32 * (sub / 2) + l) >> shift) & 0x0F;
      if (fifth_bit) q |= ((byte_at(qh, l) >> sub) & 1) << 4;
      y[32 * sub + l] = dl * static_cast<float>(q) - ml;
    }
  }
}

void q4_k(const std::byte* block, float* y) { q45_k(block, y, false); }
void q5_k(const std::byte* block, float* y) { q45_k(block, y, true); }

void q6_k(const std::byte* block, float* y) {  // {ql[128]; qh[64]; int8 scales[16]; fp16 d}: d*sc * (q - 32)
  const std::byte* ql = block;
  const std::byte* qh = block + 128;
  float d = half_at(block + 208);
  for (int sub = 0; sub < 16; ++sub) {  // values 16*sub..; within each half of 128, four runs of 32
    int half = sub / 8, run = (sub % 8) / 2, l0 = 16 * (sub % 2);
    float dl = d * static_cast<float>(static_cast<int8_t>(byte_at(block, 192 + sub)));
    for (int l = l0; l < l0 + 16; ++l) {
      int low = (byte_at(ql, 64 * half + 32 * (run % 2) + l) >> (4 * (run / 2))) & 0x0F;
      int high = (byte_at(qh, 32 * half + l) >> (2 * run)) & 3;
      y[128 * half + 32 * run + l] = dl * static_cast<float>((low | (high << 4)) - 32);
    }
  }
}

}  // namespace

void dequantize_blocks(DType dtype, const std::byte* data, uint64_t blocks, float* out) {
  // Each block function as a type of its own, so that the loop inlines it.
  auto each = [&]<auto dequantize_block>(uint64_t block_bytes, int values) {
    for (uint64_t b = 0; b < blocks; ++b) dequantize_block(data + b * block_bytes, out + b * values);
  };
  switch (dtype) {
    case DType::Q4_0:
      return each.operator()<q4_0>(18, 32);
    case DType::Q4_1:
      return each.operator()<q4_1>(20, 32);
    case DType::Q5_0:
      return each.operator()<q5_0>(22, 32);
    case DType::Q5_1:
      return each.operator()<q5_1>(24, 32);
    case DType::Q8_0:
      return each.operator()<q8_0>(34, 32);
    case DType::Q2_K:
      return each.operator()<q2_k>(84, kSuperBlock);
    case DType::Q3_K:
      return each.operator()<q3_k>(110, kSuperBlock);
    case DType::Q4_K:
      return each.operator()<q4_k>(144, kSuperBlock);
    case DType::Q5_K:
      return each.operator()<q5_k>(176, kSuperBlock);
    case DType::Q6_K:
      return each.operator()<q6_k>(210, kSuperBlock);
    default:
      throw std::invalid_argument("dequantize_blocks: not a dequantized type");
  }
}

}  // namespace precdetect
