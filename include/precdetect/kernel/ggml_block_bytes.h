#pragma once
/// The pieces every ggml block decoder reads (ggml-common.h's block_* structs, little-endian, at any alignment: a
/// GGUF tensor's blocks follow each other with no padding), and the loop that runs one decoder over whole blocks.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace precdetect::ggml {

inline uint8_t byte_at(const std::byte* at, size_t i) { return static_cast<uint8_t>(at[i]); }

inline uint16_t u16_at(const std::byte* at) {
  uint16_t value;
  std::memcpy(&value, at, sizeof(value));
  return value;
}

inline uint32_t u32_at(const std::byte* at) {
  uint32_t value;
  std::memcpy(&value, at, sizeof(value));
  return value;
}

/// An fp16 bit pattern's value, exactly as GGML_FP16_TO_FP32 gives it (one per block or sub-block: cheap bit moves,
/// not a library conversion).
inline float half_value(uint16_t half) {
  uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16, exponent = (half >> 10) & 0x1Fu,
           mantissa = half & 0x3FFu;
  if (exponent == 0) {  // zero or subnormal: mantissa x 2^-24, exact in float
    float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  uint32_t bits = sign | (exponent == 0x1F ? 0x7F800000u : (exponent + 112) << 23) | (mantissa << 13);
  return std::bit_cast<float>(bits);
}

/// The fp16 value stored at `at`.
inline float half_at(const std::byte* at) { return half_value(u16_at(at)); }

/// Runs `decode_block(block, values)` over `blocks` blocks of `block_bytes` bytes at `data`, each writing
/// `block_values` floats: a template on the decoder, so that the loop inlines it.
template <auto decode_block>
void each_block(const std::byte* data, uint64_t blocks, float* out, uint64_t block_bytes, uint64_t block_values) {
  for (uint64_t b = 0; b < blocks; ++b) decode_block(data + b * block_bytes, out + b * block_values);
}

}  // namespace precdetect::ggml
