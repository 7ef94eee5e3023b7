// ggml's i-quants (ggml-quants.c, dequantize_row_iq*): 256 values per block in groups of 32, each group's scale a
// few bits times the block's fp16 d. IQ2 and IQ3 codes index grids of 8 or 4 magnitudes with signs beside them,
// IQ1 codes a grid of -1/0/1 shifted by +-1/8, IQ4 codes sixteen non-linear levels. Offsets are those of
// ggml-common.h's block_iq* structs.
#include <array>
#include <cstring>

#include "precdetect/kernel/ggml_block_bytes.h"
#include "precdetect/kernel/ggml_decoders.h"
#include "precdetect/kernel/ggml_grids.h"

namespace precdetect::ggml {
namespace {

constexpr uint64_t kValues = 256;  // QK_K

/// Each sign byte's eight factors, -1 where bit j is set, else 1: what ggml multiplies by (kmask_iq2xs's bits).
constexpr std::array<std::array<float, 8>, 256> sign_factors() {
  std::array<std::array<float, 8>, 256> factors{};
  for (int signs = 0; signs < 256; ++signs)
    for (int j = 0; j < 8; ++j) factors[signs][j] = (signs >> j) & 1 ? -1.0f : 1.0f;
  return factors;
}
constexpr std::array<std::array<float, 8>, 256> kSignFactors = sign_factors();

/// y[j] = scale x byte j of `row` x the sign factor j of `signs`, for an 8-value grid row (as ggml computes it:
/// db * grid[j] * (signs & kmask_iq2xs[j] ? -1.f : 1.f)).
inline void signed_row(float scale, uint64_t row, uint8_t signs, float* y) {
  std::array<uint8_t, 8> grid;
  std::memcpy(grid.data(), &row, sizeof(row));  // little-endian: value j in byte j
  for (int j = 0; j < 8; ++j) y[j] = scale * static_cast<float>(grid[j]) * kSignFactors[signs][j];
}

/// Two 4-value rows of an IQ3 grid as one 8-value row, the first in the low bytes.
inline uint64_t joined(uint32_t first, uint32_t second) { return first | (static_cast<uint64_t>(second) << 32); }

/// A group's scale from its 4-bit code s, as IQ2 computes it: d x (0.5 + s) x 0.25.
inline float iq2_scale(float d, uint32_t code) { return d * (0.5f + static_cast<float>(code)) * 0.25f; }

void iq2_xxs(const std::byte* block, float* y) {  // {fp16 d; per group: 4 grid bytes, then signs and scale}
  float d = half_at(block);
  for (int group = 0; group < 8; ++group, y += 32) {
    const std::byte* at = block + 2 + 8 * group;
    uint32_t signs_and_scale = u32_at(at + 4);  // four 7-bit sign codes, then the scale in the top 4 bits
    float scale = iq2_scale(d, signs_and_scale >> 28);
    for (int l = 0; l < 4; ++l)
      signed_row(scale, kIq2xxsGrid[byte_at(at, l)], kSignsIq2xs[(signs_and_scale >> (7 * l)) & 127], y + 8 * l);
  }
}

void iq2_xs(const std::byte* block, float* y) {  // {fp16 d; uint16 qs[32]: 9-bit grid + 7-bit signs; scales[8]}
  float d = half_at(block);
  for (int group = 0; group < 8; ++group, y += 32) {
    uint8_t scales = byte_at(block, 66 + group);
    for (int l = 0; l < 4; ++l) {
      uint16_t code = u16_at(block + 2 + 2 * (4 * group + l));
      float scale = iq2_scale(d, l < 2 ? scales & 0x0F : scales >> 4);
      signed_row(scale, kIq2xsGrid[code & 511], kSignsIq2xs[code >> 9], y + 8 * l);
    }
  }
}

void iq2_s(const std::byte* block, float* y) {  // {fp16 d; qs[32]; signs[32]; qh[8]; scales[8]}
  float d = half_at(block);
  for (int group = 0; group < 8; ++group, y += 32) {
    uint8_t high = byte_at(block, 66 + group), scales = byte_at(block, 74 + group);
    for (int l = 0; l < 4; ++l) {
      unsigned index = byte_at(block, 2 + 4 * group + l) | ((high << (8 - 2 * l)) & 0x300);
      float scale = iq2_scale(d, l < 2 ? scales & 0x0F : scales >> 4);
      signed_row(scale, kIq2sGrid[index], byte_at(block, 34 + 4 * group + l), y + 8 * l);
    }
  }
}

void iq3_xxs(const std::byte* block, float* y) {  // {fp16 d; grid bytes[64]; per group signs and scale[32]}
  float d = half_at(block);
  for (int group = 0; group < 8; ++group, y += 32) {
    const std::byte* codes = block + 2 + 8 * group;
    uint32_t signs_and_scale = u32_at(block + 66 + 4 * group);
    float scale = d * (0.5f + static_cast<float>(signs_and_scale >> 28)) * 0.5f;
    for (int l = 0; l < 4; ++l) {
      uint64_t row = joined(kIq3xxsGrid[byte_at(codes, 2 * l)], kIq3xxsGrid[byte_at(codes, 2 * l + 1)]);
      signed_row(scale, row, kSignsIq2xs[(signs_and_scale >> (7 * l)) & 127], y + 8 * l);
    }
  }
}

void iq3_s(const std::byte* block, float* y) {  // {fp16 d; qs[64]; qh[8]; signs[32]; scales[4]}
  float d = half_at(block);
  for (int group = 0; group < 8; ++group, y += 32) {
    const std::byte* codes = block + 2 + 8 * group;
    uint8_t high = byte_at(block, 66 + group), scales = byte_at(block, 106 + group / 2);
    float scale = d * static_cast<float>(1 + 2 * (group % 2 == 0 ? scales & 0x0F : scales >> 4));
    for (int l = 0; l < 4; ++l) {
      uint32_t first = kIq3sGrid[byte_at(codes, 2 * l) | ((high << (8 - 2 * l)) & 256)];
      uint32_t second = kIq3sGrid[byte_at(codes, 2 * l + 1) | ((high << (7 - 2 * l)) & 256)];
      signed_row(scale, joined(first, second), byte_at(block, 74 + 4 * group + l), y + 8 * l);
    }
  }
}

/// y[j] = scale x (grid value j + delta) for an 8-value row of iq1s_grid (int8 values).
inline void shifted_row(float scale, uint64_t row, float delta, float* y) {
  std::array<int8_t, 8> grid;
  std::memcpy(grid.data(), &row, sizeof(row));
  for (int j = 0; j < 8; ++j) y[j] = scale * (static_cast<float>(grid[j]) + delta);
}

void iq1_s(const std::byte* block, float* y) {  // {fp16 d; qs[32]; uint16 qh[8]: 3 bits per code, scale, sign}
  float d = half_at(block);
  for (int group = 0; group < 8; ++group, y += 32) {
    uint16_t high = u16_at(block + 34 + 2 * group);
    float scale = d * static_cast<float>(2 * ((high >> 12) & 7) + 1);
    float delta = high & 0x8000 ? -kIq1sDelta : kIq1sDelta;
    for (int l = 0; l < 4; ++l) {
      unsigned index = byte_at(block, 2 + 4 * group + l) | (((high >> (3 * l)) & 7) << 8);
      shifted_row(scale, kIq1sGrid[index], delta, y + 8 * l);
    }
  }
}

/// IQ1_M's fp16 d: the top four bits of each of its four 16-bit scale words.
float iq1_m_d(const std::byte* scales) {
  uint16_t bits = 0;
  for (int k = 0; k < 4; ++k) bits |= (u16_at(scales + 2 * k) & 0xF000) >> (12 - 4 * k);
  return half_value(bits);
}

void iq1_m(const std::byte* block, float* y) {  // {qs[32]; qh[16]: two codes' high bits and shifts; scales[8]}
  const std::byte* scales = block + 48;
  float d = iq1_m_d(scales);
  for (int group = 0; group < 8; ++group, y += 32) {
    uint16_t word = u16_at(scales + 2 * (group / 2));
    int shift = 6 * (group % 2);
    for (int l = 0; l < 4; ++l) {
      uint8_t high = byte_at(block, 32 + 2 * group + l / 2) >> (4 * (l % 2));  // this code's 4 bits of qh
      float scale = d * static_cast<float>(2 * ((word >> (shift + (l < 2 ? 0 : 3))) & 7) + 1);
      unsigned index = byte_at(block, 4 * group + l) | ((high & 7) << 8);
      shifted_row(scale, kIq1sGrid[index], high & 0x08 ? -kIq1sDelta : kIq1sDelta, y + 8 * l);
    }
  }
}

/// 32 values from 16 bytes of IQ4 codes: low nibbles first, then high ones, each a level of kvalues_iq4nl x scale.
inline void iq4_levels(float scale, const std::byte* codes, float* y) {
  for (int j = 0; j < 16; ++j) {
    uint8_t pair = byte_at(codes, j);
    y[j] = scale * static_cast<float>(kValuesIq4nl[pair & 0x0F]);
    y[j + 16] = scale * static_cast<float>(kValuesIq4nl[pair >> 4]);
  }
}

void iq4_nl(const std::byte* block, float* y) { iq4_levels(half_at(block), block + 2, y); }  // {fp16 d; qs[16]}

void iq4_xs(const std::byte* block, float* y) {  // {fp16 d; uint16 scales_h; scales_l[4]; qs[128]}
  float d = half_at(block);
  uint16_t high = u16_at(block + 2);
  for (int group = 0; group < 8; ++group) {
    int low = (byte_at(block, 4 + group / 2) >> (4 * (group % 2))) & 0x0F;
    int code = low | (((high >> (2 * group)) & 3) << 4);
    iq4_levels(d * static_cast<float>(code - 32), block + 8 + 16 * group, y + 32 * group);
  }
}

}  // namespace

void decode_iq2_xxs(const std::byte* data, uint64_t blocks, float* out) {
  each_block<iq2_xxs>(data, blocks, out, 66, kValues);
}
void decode_iq2_xs(const std::byte* data, uint64_t blocks, float* out) {
  each_block<iq2_xs>(data, blocks, out, 74, kValues);
}
void decode_iq2_s(const std::byte* data, uint64_t blocks, float* out) {
  each_block<iq2_s>(data, blocks, out, 82, kValues);
}
void decode_iq3_xxs(const std::byte* data, uint64_t blocks, float* out) {
  each_block<iq3_xxs>(data, blocks, out, 98, kValues);
}
void decode_iq3_s(const std::byte* data, uint64_t blocks, float* out) {
  each_block<iq3_s>(data, blocks, out, 110, kValues);
}
void decode_iq1_s(const std::byte* data, uint64_t blocks, float* out) {
  each_block<iq1_s>(data, blocks, out, 50, kValues);
}
void decode_iq1_m(const std::byte* data, uint64_t blocks, float* out) {
  each_block<iq1_m>(data, blocks, out, 56, kValues);
}
void decode_iq4_nl(const std::byte* data, uint64_t blocks, float* out) {
  each_block<iq4_nl>(data, blocks, out, 18, 32);
}
void decode_iq4_xs(const std::byte* data, uint64_t blocks, float* out) {
  each_block<iq4_xs>(data, blocks, out, 136, kValues);
}

}  // namespace precdetect::ggml
