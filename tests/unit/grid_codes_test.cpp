// GridCodes' word-at-a-time traversal against its code-at-a-time reading (which the end-to-end tests check against
// GPTQ's, AWQ's and compressed-tensors' own dequantization): every layout and width, grids of partial words, read
// in tiles of rows and columns.
#include "precdetect/quantize/grid_codes.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace precdetect {
namespace {

struct Layout {
  bool transposed;
  int packed_dim;
  bool awq_order;
};

/// Random words holding a rows x columns grid of `bits`-bit codes in `layout`.
HostValues random_words(const Layout& layout, int bits, int64_t rows, int64_t columns) {
  std::vector<int64_t> shape = {layout.transposed ? columns : rows, layout.transposed ? rows : columns};
  int64_t& packed = shape[static_cast<size_t>(layout.packed_dim)];
  packed = layout.awq_order ? (packed + 7) / 8 : (packed * bits + 31) / 32;
  std::vector<std::byte> bytes(static_cast<size_t>(shape[0] * shape[1]) * 4);
  std::mt19937 generator(static_cast<unsigned>(bits * 16 + layout.packed_dim * 2 + (layout.transposed ? 1 : 0)));
  for (size_t i = 0; i < bytes.size(); i += 4) {
    uint32_t word = generator();
    std::memcpy(bytes.data() + i, &word, 4);
  }
  return HostValues(DType::I32, shape, std::move(bytes));
}

void expect_each_code_once_as_stored(const Layout& layout, int bits) {
  const int64_t rows = 37, columns = 45;
  const PackedGrid grid{
      .transposed = layout.transposed, .packed_dim = layout.packed_dim, .awq_order = layout.awq_order};
  const HostValues words = random_words(layout, bits, rows, columns);
  const GridCodes codes(grid, words, bits);
  const bool whole_words = layout.awq_order || 32 % bits == 0;
  // Tiles of rows and columns, starting at a word where a word's codes run along them.
  const int64_t per_word = whole_words ? codes.codes_per_word() : 1;
  const int64_t band = codes.codes_along_rows() ? 2 * per_word : 5;
  const int64_t span = codes.codes_along_rows() ? 7 : 2 * per_word;
  std::vector<int> visits(static_cast<size_t>(rows * columns));
  for (int64_t first_row = 0; first_row < rows; first_row += band)
    for (int64_t first_column = 0; first_column < columns; first_column += span) {
      const int64_t last_row = std::min(rows, first_row + band), last_column = std::min(columns, first_column + span);
      codes.for_each_code(
          first_row, last_row, first_column, last_column, [&](int64_t row, int64_t column, uint32_t code, int place) {
            ASSERT_TRUE(row >= first_row && row < last_row && column >= first_column && column < last_column)
                << row << ", " << column;
            ++visits[static_cast<size_t>(row * columns + column)];
            EXPECT_EQ(code, codes.stored(row, column)) << row << ", " << column;
            // A code's place in its word: codes read one by one (straddling words) have none.
            int64_t along = codes.codes_along_rows() ? row : column;
            EXPECT_EQ(place, whole_words ? along % per_word : 0) << row << ", " << column;
          });
    }
  for (int visited : visits) EXPECT_EQ(visited, 1);
}

TEST(GridCodes, EveryLayoutAndWidthVisitsEachCodeOnceAsStored) {
  for (Layout layout :
       {Layout{false, 1, false}, Layout{true, 0, false}, Layout{true, 1, false}, Layout{false, 0, false}})
    for (int bits = 1; bits <= 8; ++bits) {
      SCOPED_TRACE(::testing::Message() << "transposed " << layout.transposed << " packed_dim " << layout.packed_dim
                                        << " bits " << bits);
      expect_each_code_once_as_stored(layout, bits);
    }
}

TEST(GridCodes, AwqOrderVisitsEachCodeOnceAsStored) {
  expect_each_code_once_as_stored(Layout{true, 1, true}, 4);   // AWQ's qweight [in, out / 8], codes down the rows
  expect_each_code_once_as_stored(Layout{false, 1, true}, 4);  // the same order along a row
}

}  // namespace
}  // namespace precdetect
