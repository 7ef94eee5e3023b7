#include "precdetect/analyze/zero_point_stats.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "precdetect/analyze/grid_codes.h"
#include "precdetect/analyze/narrow_rounding.h"
#include "precdetect/analyze/table_stats.h"
#include "precdetect/analyze/widen.h"
#include "precdetect/core/error.h"

namespace precdetect {
namespace {

/// The dequantized weight as rows (outputs) x columns (inputs), and its groups of columns per row.
struct Geometry {
  int64_t rows = 0, columns = 0, groups = 0;
};

class Mismatch {
 public:
  Mismatch(const std::filesystem::path& file, std::string_view weight) : file_(file), weight_(weight) {}
  [[noreturn]] void operator()(std::string_view detail) const {
    fail(ErrorCode::kSizeMismatch, file_, fmt::format("quantized weight `{}`: {}", weight_, detail));
  }

 private:
  const std::filesystem::path& file_;
  std::string_view weight_;
};

/// The words a packed dimension of `length` codes takes.
int64_t words_for(const PackedGrid& grid, int64_t length, int bits) {
  return grid.awq_order ? (length + 7) / 8 : (length * bits + 31) / 32;
}

/// Checks that `words` holds `grid` of rows x columns codes at `bits`: 2-D 32-bit words, as many as packing needs.
void check_grid(const PackedGrid& grid, const HostValues& words, int bits, int64_t rows, int64_t columns,
                const Mismatch& mismatch) {
  std::array<int64_t, 2> expected = {grid.transposed ? columns : rows, grid.transposed ? rows : columns};
  int64_t& packed = expected[static_cast<size_t>(grid.packed_dim)];
  packed = words_for(grid, packed, bits);
  bool words32 = words.dtype() == DType::I32 || words.dtype() == DType::U32;
  if (!words32 || words.shape() != std::vector<int64_t>(expected.begin(), expected.end()))
    mismatch(fmt::format("`{}` of shape [{}] ({}) is not the {}-bit packing of {} x {} codes (expected int32 [{}])",
                         grid.tensor, fmt::join(words.shape(), ", "), dtype_name(words.dtype()), bits, rows, columns,
                         fmt::join(expected, ", ")));
}

/// Rows and columns from compressed-tensors' weight_shape, else from the packed words alone (every word full).
std::pair<int64_t, int64_t> weight_dims(const ZeroPointParts& parts, const ScaleLink& link, const Mismatch& mismatch) {
  const PackedGrid& grid = link.zero_point->codes;
  if (parts.codes.shape().size() != 2) mismatch(fmt::format("`{}` is not 2-D", grid.tensor));
  if (parts.shape) {
    const HostValues& shape = *parts.shape;
    if (shape.dtype() != DType::I64 || shape.numel() != 2)
      mismatch(fmt::format("`{}` is not two int64 values", link.zero_point->shape_tensor));
    return {load_raw<int64_t>(shape.data(), 0), load_raw<int64_t>(shape.data(), 1)};
  }
  std::array<int64_t, 2> dims = {parts.codes.shape()[0], parts.codes.shape()[1]};
  int64_t& packed = dims[static_cast<size_t>(grid.packed_dim)];
  packed = grid.awq_order ? packed * 8 : packed * 32 / link.bits;
  return grid.transposed ? std::pair{dims[1], dims[0]} : std::pair{dims[0], dims[1]};
}

Geometry geometry(const ZeroPointParts& parts, const ScaleLink& link, const Mismatch& mismatch) {
  const ZeroPointCodes& codes = *link.zero_point;
  auto [rows, columns] = weight_dims(parts, link, mismatch);
  if (rows <= 0 || columns <= 0) mismatch(fmt::format("{} x {} values", rows, columns));
  check_grid(codes.codes, parts.codes, link.bits, rows, columns, mismatch);
  Geometry geometry{.rows = rows, .columns = columns, .groups = 1};
  const std::vector<int64_t>& scale = parts.scales.shape();
  if (parts.scales.numel() > 1) {
    bool fits = scale.size() == 2 && scale[codes.scales_transposed ? 1 : 0] == rows;
    geometry.groups = fits ? scale[codes.scales_transposed ? 0 : 1] : 0;
    if (scale.size() == 1 && scale[0] == rows) geometry.groups = 1;
    if (geometry.groups <= 0 || (!parts.group_index && columns % geometry.groups != 0))
      mismatch(fmt::format("scales `{}` of shape [{}] fit no groups of {} x {} values", link.tensor,
                           fmt::join(scale, ", "), rows, columns));
  }
  if (parts.zeros) check_grid(*codes.zeros, *parts.zeros, link.bits, rows, geometry.groups, mismatch);
  if (parts.group_index &&
      (parts.group_index->dtype() != DType::I32 || parts.group_index->numel() != static_cast<uint64_t>(columns)))
    mismatch(fmt::format("`{}` is not {} int32 group indices", codes.group_index, columns));
  return geometry;
}

/// Each column's group: GPTQ's g_idx (act-order permutes them), else consecutive columns of equal groups.
std::vector<int32_t> groups_of_columns(const ZeroPointParts& parts, const Geometry& shape, const Mismatch& mismatch) {
  std::vector<int32_t> groups(static_cast<size_t>(shape.columns));
  int64_t group_size = shape.columns / shape.groups;
  for (int64_t column = 0; column < shape.columns; ++column) {
    int32_t group = parts.group_index ? load_raw<int32_t>(parts.group_index->data(), column)
                                      : static_cast<int32_t>(column / group_size);
    if (group < 0 || group >= shape.groups)
      mismatch(fmt::format("column {} names group {} of {}", column, group, shape.groups));
    groups[static_cast<size_t>(column)] = group;
  }
  return groups;
}

/// Every scale as rows x groups (one for the whole tensor repeated), widened to float: exact.
std::vector<float> scales_by_row(const ZeroPointParts& parts, const ZeroPointCodes& codes, const Geometry& shape) {
  std::vector<float> stored(parts.scales.numel()), scales(static_cast<size_t>(shape.rows * shape.groups));
  widen(parts.scales, 0, stored.size(), stored.data());
  for (int64_t row = 0; row < shape.rows; ++row)
    for (int64_t group = 0; group < shape.groups; ++group) {
      int64_t index = stored.size() == 1        ? 0
                      : codes.scales_transposed ? group * shape.rows + row
                                                : row * shape.groups + group;
      scales[static_cast<size_t>(row * shape.groups + group)] = stored[static_cast<size_t>(index)];
    }
  return scales;
}

/// Columns [first_column, last_column), which hold groups [first_group, last_group) and no other.
struct Span {
  int64_t first_column, last_column;
  int32_t first_group, last_group;
};

/// One span per group where every group is one run of consecutive columns, in order, each starting at a word where
/// a word's codes run along a row (GPTQ's and AWQ's usual groups; not act-order's); else none.
std::vector<Span> group_spans(const std::vector<int32_t>& groups, const GridCodes& codes) {
  const int64_t per_word = codes.codes_along_rows() ? 1 : codes.codes_per_word();
  std::vector<Span> spans;
  for (size_t column = 0; column < groups.size(); ++column) {
    if (column > 0 && groups[column] == groups[column - 1]) continue;
    if (groups[column] != static_cast<int32_t>(spans.size()) || static_cast<int64_t>(column) % per_word != 0) return {};
    if (!spans.empty()) spans.back().last_column = static_cast<int64_t>(column);
    spans.push_back(
        Span{static_cast<int64_t>(column), static_cast<int64_t>(groups.size()), groups[column], groups[column] + 1});
  }
  return spans;
}

/// How each code finds its group's table in a tile: the tile's one group, its word's (every word's codes along a
/// row in one group), or its column's.
enum class GroupLookup { kTile, kWord, kColumn };

/// The work's units: tiles of a band of rows by a span of columns, each with its tables of every (group, row, stored
/// code) value laid out group by group. GPTQ's and AWQ's transposed grids hold a group's columns of every row as
/// consecutive stored rows: where groups are runs of columns, a tile spans one group and as many rows as its tables
/// let, and its codes are read front to back. Elsewhere (compressed-tensors' rows, act-order's scattered groups) a
/// tile spans every column.
class Tiles {
 public:
  Tiles(const ScaleLink& link, const Geometry& shape, const GridCodes& codes, const std::vector<int32_t>& groups)
      : levels_(size_t{1} << link.bits) {
    if (codes.transposed()) spans_ = group_spans(groups, codes);
    lookup_ = !spans_.empty()                                                     ? GroupLookup::kTile
              : !codes.codes_along_rows() && groups_of_whole_words(groups, codes) ? GroupLookup::kWord
                                                                                  : GroupLookup::kColumn;
    if (spans_.empty()) spans_.push_back(Span{0, shape.columns, 0, static_cast<int32_t>(shape.groups)});
    const int64_t span_groups = spans_.size() == 1 ? shape.groups : 1;
    rows_ = std::clamp<int64_t>(kTableValues / (span_groups << link.bits), 1, shape.rows);
    const int64_t multiple = codes.codes_along_rows() ? codes.codes_per_word() : 1;  // a band starts at a word
    rows_ = (rows_ + multiple - 1) / multiple * multiple;
    bands_ = (shape.rows + rows_ - 1) / rows_;
  }

  GroupLookup lookup() const { return lookup_; }
  uint64_t count() const { return static_cast<uint64_t>(bands_) * spans_.size(); }
  int64_t rows() const { return rows_; }
  /// Tile `unit`'s first row and span.
  int64_t first_row(uint64_t unit) const { return static_cast<int64_t>(unit / spans_.size()) * rows_; }
  const Span& span(uint64_t unit) const { return spans_[unit % spans_.size()]; }
  size_t table_size() const {
    const auto most_groups =
        std::ranges::max(spans_, {}, [](const Span& span) { return span.last_group - span.first_group; });
    return static_cast<size_t>((most_groups.last_group - most_groups.first_group) * rows_) * levels_;
  }
  /// Where group `group`'s tables start in a tile whose groups start at `first_group`.
  size_t group_start(int32_t group, int32_t first_group) const {
    return static_cast<size_t>((group - first_group) * rows_) * levels_;
  }
  /// The value of `code` at `row` (of the tile starting at `first_row`), from its group's start.
  size_t at(int64_t first_row, int64_t row, uint32_t code) const {
    return static_cast<size_t>(row - first_row) * levels_ + code;  // a product: one instruction, a shift by a
    // register three on some CPUs
  }

 private:
  static constexpr int64_t kTableValues = int64_t{1} << 16;  // a tile's tables stay in the cache beside its codes

  /// Whether every run of a word's codes along a row, from column 0 on, lies in one group.
  static bool groups_of_whole_words(const std::vector<int32_t>& groups, const GridCodes& codes) {
    const auto per_word = static_cast<size_t>(codes.codes_per_word());
    for (size_t column = 0; column < groups.size(); ++column)
      if (groups[column] != groups[column - column % per_word]) return false;
    return true;
  }

  size_t levels_;  // not an int: a count's increment (a uint32_t) could alias one, reloading it for every value
  std::vector<Span> spans_;
  GroupLookup lookup_ = GroupLookup::kColumn;
  int64_t rows_ = 1, bands_ = 0;
};

/// The tables of tile `unit`: scale x (code - zero) for each row, group and stored code, rounded to the scales' dtype.
template <DType kResult>
void fill_tables(const ScaleLink& link, const Geometry& shape, const Tiles& tiles, const std::vector<float>& scales,
                 const std::optional<GridCodes>& zeros, uint64_t unit, std::vector<NarrowValue<kResult>>& tables) {
  const ZeroPointCodes& codes = *link.zero_point;
  const int levels = 1 << link.bits;
  const Span& span = tiles.span(unit);
  const int64_t first_row = tiles.first_row(unit), last_row = std::min(shape.rows, first_row + tiles.rows());
  std::array<float, 256> products{};
  for (int64_t row = first_row; row < last_row; ++row)
    for (int32_t group = span.first_group; group < span.last_group; ++group) {
      int zero = zeros ? static_cast<int>(zeros->stored(row, group)) + codes.zeros->offset : 0;
      float scale = scales[static_cast<size_t>(row * shape.groups + group)];
      // (code - zero) has at most 9 significant bits and the scale at most 24: a float16 or bfloat16 scale's
      // product is exact in float32, a float32 one's rounded once, as the kernels' own product.
      for (int code = 0; code < levels; ++code)
        products[static_cast<size_t>(code)] = static_cast<float>(code + codes.codes.offset - zero) * scale;
      narrow_magnitudes<kResult>(
          products.data(), static_cast<size_t>(levels),
          tables.data() + tiles.group_start(group, span.first_group) + tiles.at(first_row, row, 0));
    }
}

/// Tile `unit`'s values through its tables, each code's group found as kLookup says. Flattened: left to itself,
/// GCC called the per-code step out of line, 2.5x slower.
template <GroupLookup kLookup, typename Tables, typename Decoded>
[[gnu::flatten]] void decode_tile(const GridCodes& codes, const Tiles& tiles, const std::vector<size_t>& column_starts,
                                  const Geometry& shape, uint64_t unit, const Tables& tables, Decoded& decoded) {
  const Span& span = tiles.span(unit);
  const int64_t first_row = tiles.first_row(unit), last_row = std::min(shape.rows, first_row + tiles.rows());
  decoded.reserve(static_cast<uint64_t>((last_row - first_row) * (span.last_column - span.first_column)));
  codes.for_each_code(first_row, last_row, span.first_column, span.last_column,
                      [&](int64_t row, int64_t column, uint32_t code, int place) {
                        size_t start = 0;  // kTile: the tile's one group
                        if constexpr (kLookup == GroupLookup::kWord) start = column_starts[column - place];
                        if constexpr (kLookup == GroupLookup::kColumn) start = column_starts[column];
                        decoded.add(tables[start + tiles.at(first_row, row, code)], static_cast<unsigned>(place));
                      });
}

}  // namespace

TensorStats zero_point_stats(const ZeroPointParts& parts, const ScaleLink& link, const std::filesystem::path& file,
                             std::string_view weight) {
  const Mismatch mismatch(file, weight);
  const Geometry shape = geometry(parts, link, mismatch);
  const std::vector<float> scales = scales_by_row(parts, *link.zero_point, shape);
  const GridCodes codes(link.zero_point->codes, parts.codes, link.bits);
  const std::vector<int32_t> groups = groups_of_columns(parts, shape, mismatch);
  const Tiles tiles(link, shape, codes, groups);
  std::vector<size_t> column_starts(groups.size());  // each column's group's start in a tile spanning every column
  std::ranges::transform(groups, column_starts.begin(), [&](int32_t group) { return tiles.group_start(group, 0); });
  std::optional<GridCodes> zeros;
  if (parts.zeros) zeros.emplace(*link.zero_point->zeros, *parts.zeros, link.bits);
  return for_result_dtype(parts.scales.dtype(), [&]<DType kResult>() {
    return table_stats<kResult>(
        tiles.count(), static_cast<uint64_t>(shape.rows * shape.columns) / std::max<uint64_t>(tiles.count(), 1),
        tiles.table_size(),
        [&](uint64_t unit, auto& tables) { fill_tables<kResult>(link, shape, tiles, scales, zeros, unit, tables); },
        [&](uint64_t unit, const auto& tables, auto& decoded) {
          using Tables = std::remove_cvref_t<decltype(tables)>;
          using Decoded = std::remove_cvref_t<decltype(decoded)>;
          auto decode = tiles.lookup() == GroupLookup::kTile   ? decode_tile<GroupLookup::kTile, Tables, Decoded>
                        : tiles.lookup() == GroupLookup::kWord ? decode_tile<GroupLookup::kWord, Tables, Decoded>
                                                               : decode_tile<GroupLookup::kColumn, Tables, Decoded>;
          decode(codes, tiles, column_starts, shape, unit, tables, decoded);
        });
  });
}

}  // namespace precdetect
