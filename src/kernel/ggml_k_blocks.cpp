// ggml's K-quants (ggml-quants.c, dequantize_row_q*_K): 256 values in sub-blocks of 16 or 32, each with its own
// scale (and minimum) packed in 4 to 8 bits and multiplied by the block's fp16 d (and dmin). Offsets are those of
// ggml-common.h's block_q*_K structs.
#include <array>

#include "precdetect/kernel/ggml_block_bytes.h"
#include "precdetect/kernel/ggml_decoders.h"

namespace precdetect::ggml {
namespace {

constexpr uint64_t kValues = 256;  // QK_K

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

void decode_q2_k(const std::byte* data, uint64_t blocks, float* out) {
  each_block<q2_k>(data, blocks, out, 84, kValues);
}
void decode_q3_k(const std::byte* data, uint64_t blocks, float* out) {
  each_block<q3_k>(data, blocks, out, 110, kValues);
}
void decode_q4_k(const std::byte* data, uint64_t blocks, float* out) {
  each_block<q4_k>(data, blocks, out, 144, kValues);
}
void decode_q5_k(const std::byte* data, uint64_t blocks, float* out) {
  each_block<q5_k>(data, blocks, out, 176, kValues);
}
void decode_q6_k(const std::byte* data, uint64_t blocks, float* out) {
  each_block<q6_k>(data, blocks, out, 210, kValues);
}

}  // namespace precdetect::ggml
