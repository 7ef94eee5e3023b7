#pragma once
/// fp4 e2m1 codes, two to a byte with the first in the low nibble (OCP's microscaling formats, NVIDIA's nvfp4, as
/// gpt-oss, MLX and compressed-tensors store them): their values, and a group's codes handed to a table's decoder.

#include <array>
#include <cstdint>

namespace precdetect {

/// fp4 e2m1's magnitudes by code (the sign bit, 8, dropped: statistics are of magnitudes).
inline constexpr std::array<float, 8> kE2m1Magnitudes = {0.0F, 0.5F, 1.0F, 1.5F, 2.0F, 3.0F, 4.0F, 6.0F};

/// Adds the `count` codes (an even number) packed in the bytes at `first`, low nibble first, each through `table`
/// (16 entries, by code) to `decoded` (a DecodedValues of table_stats).
template <typename Table, typename Decoded>
void decode_fp4_pairs(const uint8_t* first, uint64_t count, const Table& table, Decoded& decoded) {
  for (uint64_t i = 0; i < count / 2; ++i) {
    const uint8_t pair = first[i];  // a local: an increment of a count could alias a uint8_t, which would reload it
    decoded.add(table[pair & 0xf], 0);
    decoded.add(table[pair >> 4], 1);
  }
}

}  // namespace precdetect
