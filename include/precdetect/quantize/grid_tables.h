#pragma once
/// The statistics of a grid of integer codes decoded through a table per row and group: each code q of group g in
/// row r stands for the value table(r, g)[q] (GPTQ's, AWQ's and compressed-tensors' scale x (q - zero), MLX's
/// scale x q + bias). The grid is cut into tiles whose tables stay in the cache beside their codes, each tile's
/// codes read in the order the words are stored (GridCodes), each value counted as its float twin's is
/// (table_stats).

#include <algorithm>
#include <cstdint>
#include <vector>

#include "precdetect/quantize/grid_codes.h"
#include "precdetect/quantize/narrow_rounding.h"
#include "precdetect/quantize/table_stats.h"

namespace precdetect {

/// Columns [first_column, last_column), which hold groups [first_group, last_group) and no other.
struct Span {
  int64_t first_column, last_column;
  int32_t first_group, last_group;
};

/// How each code finds its group's table in a tile: the tile's one group, its word's (every word's codes along a
/// row in one group), or its column's.
enum class GroupLookup { kTile, kWord, kColumn };

/// The work's units: tiles of a band of rows by a span of columns, each with its tables of every (group, row, stored
/// code) value laid out group by group. GPTQ's and AWQ's transposed grids hold a group's columns of every row as
/// consecutive stored rows: where groups are runs of columns, a tile spans one group and as many rows as its tables
/// let, and its codes are read front to back. Elsewhere (rows stored whole, act-order's scattered groups) a tile
/// spans every column.
class Tiles {
 public:
  /// `groups`: each column's group, of `group_count`. Throws Error (kSizeMismatch) for groups too many and too
  /// scattered to tabulate.
  Tiles(const GridCodes& codes, int bits, int64_t rows, const std::vector<int32_t>& groups, int32_t group_count);

  GroupLookup lookup() const { return lookup_; }
  uint64_t count() const { return static_cast<uint64_t>(bands_) * spans_.size(); }
  /// Tile `unit`'s rows and span.
  int64_t first_row(uint64_t unit) const { return static_cast<int64_t>(unit / spans_.size()) * rows_; }
  int64_t last_row(uint64_t unit) const { return std::min(grid_rows_, first_row(unit) + rows_); }
  const Span& span(uint64_t unit) const { return spans_[unit % spans_.size()]; }
  /// The table values a tile holds at most.
  size_t table_size() const;
  /// Where group `group`'s tables start in a tile whose groups start at `first_group` (below 2^32: the
  /// constructor refuses larger tables).
  uint32_t group_start(int32_t group, int32_t first_group) const {
    return static_cast<uint32_t>(static_cast<size_t>((group - first_group) * rows_) * levels_);
  }
  /// The table values of one (row, group): a row's tables lie `levels()` apart within a group's, each code's value
  /// at row x levels + code (a product: one instruction, where a shift by a register is three on some CPUs).
  size_t levels() const { return levels_; }

 private:
  size_t levels_;
  std::vector<Span> spans_;
  GroupLookup lookup_ = GroupLookup::kColumn;
  int64_t grid_rows_ = 0, rows_ = 1, bands_ = 0;
};

/// Tile `unit`'s values through its tables, each code's group found as kLookup says (`column_starts`: each column's
/// group's start in a tile spanning every column; 32-bit, so that no count's increment, a uint64_t, may alias them).
/// Flattened: left to itself, GCC called the per-code step out of line, 2.5x slower.
template <GroupLookup kLookup, typename Tables, typename Decoded>
[[gnu::flatten]] void decode_tile(const GridCodes& codes, const Tiles& tiles,
                                  const std::vector<uint32_t>& column_starts, uint64_t unit, const Tables& tables,
                                  Decoded& decoded) {
  const Span& span = tiles.span(unit);
  const int64_t first_row = tiles.first_row(unit), last_row = tiles.last_row(unit);
  // In locals: the counts' increments (uint64_t) could alias the tiles' size_t members and reload them every code.
  const size_t levels = tiles.levels();
  const uint32_t* starts = column_starts.data();
  decoded.reserve(static_cast<uint64_t>((last_row - first_row) * (span.last_column - span.first_column)));
  codes.for_each_code(first_row, last_row, span.first_column, span.last_column,
                      [&](int64_t row, int64_t column, uint32_t code, int place) {
                        uint32_t start = 0;  // kTile: the tile's one group
                        if constexpr (kLookup == GroupLookup::kWord) start = starts[column - place];
                        if constexpr (kLookup == GroupLookup::kColumn) start = starts[column];
                        decoded.add(tables[start + static_cast<size_t>(row - first_row) * levels + code],
                                    static_cast<unsigned>(place));
                      });
}

/// The statistics of `codes`, a grid of `rows` x groups.size() codes of `bits` bits whose column c is in group
/// groups[c] (of `group_count`), as a kResult result: `fill(row, group, products)` writes the 2^bits float values the
/// codes of (row, group) stand for, which narrow_magnitudes rounds to kResult.
template <DType kResult, typename Fill>
TensorStats grid_table_stats(const GridCodes& codes, int bits, int64_t rows, const std::vector<int32_t>& groups,
                             int32_t group_count, Fill fill) {
  const Tiles tiles(codes, bits, rows, groups, group_count);
  std::vector<uint32_t> column_starts(groups.size());
  std::ranges::transform(groups, column_starts.begin(), [&](int32_t group) { return tiles.group_start(group, 0); });
  const auto levels = size_t{1} << bits;
  const auto values = static_cast<uint64_t>(rows) * groups.size();
  return table_stats<kResult>(
      tiles.count(), values / std::max<uint64_t>(tiles.count(), 1), tiles.table_size(),
      [&](uint64_t unit, auto& tables) {
        const Span& span = tiles.span(unit);
        std::array<float, 256> products{};
        for (int64_t row = tiles.first_row(unit); row < tiles.last_row(unit); ++row)
          for (int32_t group = span.first_group; group < span.last_group; ++group) {
            fill(row, group, products.data());
            narrow_magnitudes<kResult>(products.data(), levels,
                                       tables.data() + tiles.group_start(group, span.first_group) +
                                           static_cast<size_t>(row - tiles.first_row(unit)) * levels);
          }
      },
      [&](uint64_t unit, const auto& tables, auto& decoded) {
        using Tables = std::remove_cvref_t<decltype(tables)>;
        using Decoded = std::remove_cvref_t<decltype(decoded)>;
        auto decode = tiles.lookup() == GroupLookup::kTile   ? decode_tile<GroupLookup::kTile, Tables, Decoded>
                      : tiles.lookup() == GroupLookup::kWord ? decode_tile<GroupLookup::kWord, Tables, Decoded>
                                                             : decode_tile<GroupLookup::kColumn, Tables, Decoded>;
        decode(codes, tiles, column_starts, unit, tables, decoded);
      });
}

}  // namespace precdetect
