#pragma once
/// Integer codes packed as a dense bit stream in little-endian 32-bit words, LSB first: code k of `bits` bits starts
/// at bit k x bits and may straddle two words (3, 5, 6 and 7 bits). How MLX, compressed-tensors and GPTQ pack theirs.

#include <cstdint>

#include "precdetect/kernel/widen.h"

namespace precdetect {

/// The code starting at bit `bit` of the stream whose words are `words[word_index(0)]`, `words[word_index(1)]`, …
/// (`word_index` maps the stream's n-th word to its element index in `words`, for streams that run down a column).
template <typename WordIndex>
uint32_t packed_code(const std::byte* words, uint64_t bit, int bits, WordIndex word_index) {
  auto word = static_cast<int64_t>(bit / 32);
  auto shift = static_cast<unsigned>(bit % 32);
  uint64_t value = uint64_t{load_raw<uint32_t>(words, word_index(word))} >> shift;
  if (shift + bits > 32) value |= uint64_t{load_raw<uint32_t>(words, word_index(word + 1))} << (32 - shift);
  return static_cast<uint32_t>(value & ((uint64_t{1} << bits) - 1));
}

}  // namespace precdetect
