// ggml's blocks of one fp16 scale d (and for Q4_1, Q5_1 a minimum m) and integer codes (ggml-quants.c,
// dequantize_row_q*_0/1, tq*_0): each value a code times d (plus m). Offsets are those of ggml-common.h's structs.
#include <array>
#include <bit>
#include <utility>

#include "precdetect/kernel/ggml_block_bytes.h"
#include "precdetect/kernel/ggml_decoders.h"

namespace precdetect::ggml {
namespace {

// The 32-value types: the low four bits of each code two per byte (value j in the low half of byte j, value j + 16
// in the high half), and for Q5 a 32-bit word of fifth bits.

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

/// Value j's and value j + 16's five-bit codes: four bits of byte j of `low`, the fifth from the word `high`.
inline std::pair<int, int> five_bit_codes(const std::byte* low, uint32_t high, int j) {
  uint8_t q = byte_at(low, j);
  return {(q & 0x0F) | static_cast<int>(((high >> j) & 1) << 4),
          (q >> 4) | static_cast<int>(((high >> (j + 16)) & 1) << 4)};
}

void q5_0(const std::byte* block, float* y) {  // {fp16 d; qh[4]; qs[16]}: (q - 16) * d
  float d = half_at(block);
  uint32_t high = u32_at(block + 2);
  for (int j = 0; j < 16; ++j) {
    auto [low, up] = five_bit_codes(block + 6, high, j);
    y[j] = static_cast<float>(low - 16) * d;
    y[j + 16] = static_cast<float>(up - 16) * d;
  }
}

void q5_1(const std::byte* block, float* y) {  // {fp16 d, m; qh[4]; qs[16]}: q * d + m
  float d = half_at(block), m = half_at(block + 2);
  uint32_t high = u32_at(block + 4);
  for (int j = 0; j < 16; ++j) {
    auto [low, up] = five_bit_codes(block + 8, high, j);
    y[j] = static_cast<float>(low) * d + m;
    y[j + 16] = static_cast<float>(up) * d + m;
  }
}

void q8_0(const std::byte* block, float* y) {  // {fp16 d; int8 qs[32]}: q * d
  float d = half_at(block);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(byte_at(block, 2 + j))) * d;
}

/// Each byte's eight sign bits (bit j set: value j positive) as float sign masks, for Q1_0's codes.
constexpr std::array<std::array<uint32_t, 8>, 256> sign_masks() {
  std::array<std::array<uint32_t, 8>, 256> masks{};
  for (int bits = 0; bits < 256; ++bits)
    for (int j = 0; j < 8; ++j) masks[bits][j] = (bits >> j) & 1 ? 0x80000000u : 0;
  return masks;
}
constexpr std::array<std::array<uint32_t, 8>, 256> kSignMasks = sign_masks();

void q1_0(const std::byte* block, float* y) {  // {fp16 d; qs[16]}: 128 values, bit j of the codes: d if set, else -d
  // -d's bits with the sign flipped back where a bit is set: the floats ggml's `bit ? d : -d` selects, 8 at a time.
  uint32_t minus_d = std::bit_cast<uint32_t>(half_at(block)) ^ 0x80000000u;
  for (int byte = 0; byte < 16; ++byte, y += 8) {
    const std::array<uint32_t, 8>& masks = kSignMasks[byte_at(block, 2 + byte)];
    for (int j = 0; j < 8; ++j) y[j] = std::bit_cast<float>(minus_d ^ masks[j]);
  }
}

void q2_0(const std::byte* block, float* y) {  // {fp16 d; qs[16]}: 64 two-bit codes, four per byte: (q - 1) * d
  float d = half_at(block);
  const std::array<float, 4> levels = {-1.0f * d, 0.0f * d, 1.0f * d, 2.0f * d};  // each code's product, once
  for (int byte = 0; byte < 16; ++byte, y += 4) {
    uint8_t q = byte_at(block, 2 + byte);
    for (int i = 0; i < 4; ++i) y[i] = levels[(q >> (2 * i)) & 3];
  }
}

// The ternary types: 256 values of -1, 0 or 1 times d (TQ2_0 stores two bits, whose fourth code gives 2).

/// TQ1_0's base-3 digit n of byte q, five to a byte (four in qh): ggml multiplies by 3^n in uint8 (wrapping) and
/// takes the top of q x 3, i.e. the digit that the fixed-point fraction q/256 has in position n.
inline float trit(uint8_t q, uint8_t power_of_three) {
  auto shifted = static_cast<uint8_t>(q * power_of_three);
  return static_cast<float>(((static_cast<uint16_t>(shifted) * 3) >> 8) - 1);
}

void tq1_0(const std::byte* block, float* y) {  // {qs[48]; qh[4]; fp16 d}: 160 + 80 values from qs, 16 from qh
  constexpr uint8_t kPowers[5] = {1, 3, 9, 27, 81};
  float d = half_at(block + 52);
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 32; ++m) *y++ = trit(byte_at(block, m), kPowers[n]) * d;
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 16; ++m) *y++ = trit(byte_at(block, 32 + m), kPowers[n]) * d;
  for (int n = 0; n < 4; ++n)
    for (int j = 0; j < 4; ++j) *y++ = trit(byte_at(block, 48 + j), kPowers[n]) * d;
}

void tq2_0(const std::byte* block, float* y) {  // {qs[64]; fp16 d}: two-bit codes, (q - 1) * d
  float d = half_at(block + 64);
  for (int half = 0; half < 2; ++half)
    for (int l = 0; l < 4; ++l)
      for (int m = 0; m < 32; ++m) *y++ = static_cast<float>(((byte_at(block, 32 * half + m) >> (2 * l)) & 3) - 1) * d;
}

}  // namespace

void decode_q4_0(const std::byte* data, uint64_t blocks, float* out) { each_block<q4_0>(data, blocks, out, 18, 32); }
void decode_q4_1(const std::byte* data, uint64_t blocks, float* out) { each_block<q4_1>(data, blocks, out, 20, 32); }
void decode_q5_0(const std::byte* data, uint64_t blocks, float* out) { each_block<q5_0>(data, blocks, out, 22, 32); }
void decode_q5_1(const std::byte* data, uint64_t blocks, float* out) { each_block<q5_1>(data, blocks, out, 24, 32); }
void decode_q8_0(const std::byte* data, uint64_t blocks, float* out) { each_block<q8_0>(data, blocks, out, 34, 32); }
void decode_q1_0(const std::byte* data, uint64_t blocks, float* out) { each_block<q1_0>(data, blocks, out, 18, 128); }
void decode_q2_0(const std::byte* data, uint64_t blocks, float* out) { each_block<q2_0>(data, blocks, out, 18, 64); }
void decode_tq1_0(const std::byte* data, uint64_t blocks, float* out) { each_block<tq1_0>(data, blocks, out, 54, 256); }
void decode_tq2_0(const std::byte* data, uint64_t blocks, float* out) { each_block<tq2_0>(data, blocks, out, 66, 256); }

}  // namespace precdetect::ggml
