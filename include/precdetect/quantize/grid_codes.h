#pragma once
/// A PackedGrid's 32-bit words read as the grid of integer codes they hold (GPTQ's, AWQ's and compressed-tensors'
/// weights and zero points), in the order the words are stored.

#include <algorithm>
#include <array>
#include <cstdint>

#include "precdetect/kernel/host_values.h"
#include "precdetect/kernel/widen.h"
#include "precdetect/load/tensor_record.h"
#include "precdetect/quantize/packed_codes.h"

namespace precdetect {

class GridCodes {
 public:
  GridCodes(const PackedGrid& grid, const HostValues& words, int bits)
      : grid_(grid), words_(words.data()), stored_columns_(words.shape()[1]), bits_(bits) {}

  /// Whether the codes of one word run down the grid's rows (AWQ's) rather than along a row (GPTQ's, and
  /// compressed-tensors'): a band of rows then starts at a multiple of codes_per_word().
  bool codes_along_rows() const { return grid_.packed_dim == (grid_.transposed ? 1 : 0); }
  int codes_per_word() const { return grid_.awq_order ? 8 : 32 / bits_; }
  /// Whether the words hold the grid's transpose (GPTQ's and AWQ's [in, out]).
  bool transposed() const { return grid_.transposed; }

  /// `emit(row, column, stored bits, place)` for every code of rows [first_row, last_row) and columns [first_column,
  /// last_column), the stored words read front to back whichever way the grid lies in them (GPTQ's transposed grid
  /// holds a band of rows as a short run of every stored row). Where a word's codes run down the rows,
  /// first_row is a multiple of codes_per_word(), else first_column is. `place` is the code's place in its word (a
  /// compile-time constant there; 0 for codes read one by one), so that where a word's codes run along a row,
  /// column - place is the word's first column.
  template <typename Emit>
  void for_each_code(int64_t first_row, int64_t last_row, int64_t first_column, int64_t last_column, Emit emit) const {
    const Region region{first_row, last_row, first_column, last_column};
    if (grid_.awq_order) return whole_words<4, true>(region, emit);
    switch (bits_) {
      case 1:
        return whole_words<1, false>(region, emit);
      case 2:
        return whole_words<2, false>(region, emit);
      case 4:
        return whole_words<4, false>(region, emit);
      case 8:
        return whole_words<8, false>(region, emit);
      default:
        return code_by_code(region, emit);
    }
  }

  /// The stored bits of code (row, column) of the grid (PackedGrid::offset not added).
  uint32_t stored(int64_t row, int64_t column) const {
    int64_t i = grid_.transposed ? column : row, j = grid_.transposed ? row : column;
    int64_t along = grid_.packed_dim == 0 ? i : j, across = grid_.packed_dim == 0 ? j : i;
    uint64_t bit = grid_.awq_order ? static_cast<uint64_t>(along / 8) * 32 + kAwqNibble[along % 8] * 4
                                   : static_cast<uint64_t>(along) * bits_;
    return packed_code(words_, bit, grid_.awq_order ? 4 : bits_, [&](int64_t word) { return index(word, across); });
  }

 private:
  /// AWQ packs output columns 0..7 of each word at nibbles 0, 2, 4, 6, 1, 3, 5, 7 (AutoAWQ's order_map): column k
  /// of a word sits at nibble kAwqNibble[k].
  static constexpr std::array<int, 8> kAwqNibble = {0, 4, 1, 5, 2, 6, 3, 7};

  struct Region {
    int64_t first_row, last_row, first_column, last_column;
  };

  template <int kBits, bool kAwq>
  static constexpr unsigned shift_of(int k) {
    return kAwq ? 4 * kAwqNibble[static_cast<size_t>(k)] : static_cast<unsigned>(k * kBits);
  }

  /// Codes filling whole words (1, 2, 4, 8 bits; AWQ's 4): a word at a time, its codes unrolled.
  template <int kBits, bool kAwq, typename Emit>
  void whole_words(const Region& region, Emit emit) const {
    if (codes_along_rows()) {
      words_of<kBits, kAwq>(
          region.first_row, region.last_row, region.first_column, region.last_column,
          [&](int64_t position, int64_t column, uint32_t code, int place) { emit(position, column, code, place); });
    } else {
      words_of<kBits, kAwq>(
          region.first_column, region.last_column, region.first_row, region.last_row,
          [&](int64_t position, int64_t row, uint32_t code, int place) { emit(row, position, code, place); });
    }
  }

  /// `visit(position, across, code, place)` for codes at positions [first, last) of the packed dimension (first a
  /// multiple of a word's codes) and [across_first, across_last) of the other, in stored order.
  template <int kBits, bool kAwq, typename Visit>
  void words_of(int64_t first, int64_t last, int64_t across_first, int64_t across_last, Visit visit) const {
    constexpr int kPerWord = kAwq ? 8 : 32 / kBits;
    constexpr uint32_t kMask = (uint64_t{1} << kBits) - 1;
    // Strides held in locals: members read through `this` would be reloaded after every store the caller makes.
    const int64_t word_stride = grid_.packed_dim == 0 ? stored_columns_ : 1;
    const int64_t across_stride = grid_.packed_dim == 0 ? 1 : stored_columns_;
    const std::byte* words = words_;
    auto word = [&](int64_t word, int64_t across) {
      const int64_t position = word * kPerWord;
      const uint32_t packed = load_raw<uint32_t>(words, word * word_stride + across * across_stride);
      if (position + kPerWord <= last) {
        for (int k = 0; k < kPerWord; ++k) visit(position + k, across, (packed >> shift_of<kBits, kAwq>(k)) & kMask, k);
      } else {
        for (int k = 0; position + k < last; ++k)
          visit(position + k, across, (packed >> shift_of<kBits, kAwq>(k)) & kMask, k);
      }
    };
    const int64_t first_word = first / kPerWord, last_word = (last + kPerWord - 1) / kPerWord;
    if (grid_.packed_dim == 0) {
      for (int64_t w = first_word; w < last_word; ++w)
        for (int64_t across = across_first; across < across_last; ++across) word(w, across);
    } else {
      for (int64_t across = across_first; across < across_last; ++across)
        for (int64_t w = first_word; w < last_word; ++w) word(w, across);
    }
  }

  /// Codes straddling words (3, 5, 6, 7 bits): one at a time, the stored rows outermost.
  template <typename Emit>
  void code_by_code(const Region& region, Emit emit) const {
    if (grid_.transposed) {
      for (int64_t column = region.first_column; column < region.last_column; ++column)
        for (int64_t row = region.first_row; row < region.last_row; ++row) emit(row, column, stored(row, column), 0);
    } else {
      for (int64_t row = region.first_row; row < region.last_row; ++row)
        for (int64_t column = region.first_column; column < region.last_column; ++column)
          emit(row, column, stored(row, column), 0);
    }
  }

  int64_t index(int64_t word, int64_t across) const {
    return grid_.packed_dim == 0 ? word * stored_columns_ + across : across * stored_columns_ + word;
  }

  const PackedGrid& grid_;
  const std::byte* words_;
  int64_t stored_columns_;
  int bits_;
};

}  // namespace precdetect
