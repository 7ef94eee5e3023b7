#include "precdetect/analyze/zero_point_stats.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <optional>
#include <vector>

#include "precdetect/analyze/narrow_rounding.h"
#include "precdetect/analyze/packed_codes.h"
#include "precdetect/analyze/table_stats.h"
#include "precdetect/analyze/widen.h"
#include "precdetect/core/error.h"

namespace precdetect {
namespace {

/// AWQ packs output columns 0..7 of each word at nibbles 0, 2, 4, 6, 1, 3, 5, 7 (AutoAWQ's order_map): column k
/// of a word sits at nibble kAwqNibble[k].
constexpr std::array<int, 8> kAwqNibble = {0, 4, 1, 5, 2, 6, 3, 7};

/// A PackedGrid's words read as the grid of codes they hold.
class GridCodes {
 public:
  GridCodes(const PackedGrid& grid, const HostValues& words, int bits)
      : grid_(grid), words_(words.data()), stored_columns_(words.shape()[1]), bits_(bits) {}

  /// `emit(column, stored bits)` for the first `length` codes of row `row`: a word at a time where the row's codes
  /// run along whole words (GPTQ's and compressed-tensors' 2, 4 and 8 bits), else code by code.
  template <typename Emit>
  void decode_row(int64_t row, int64_t length, Emit emit) const {
    bool along_row = grid_.packed_dim == (grid_.transposed ? 0 : 1);
    if (grid_.awq_order || !along_row || 32 % bits_ != 0) {
      for (int64_t column = 0; column < length; ++column) emit(column, stored(row, column));
      return;
    }
    const int per_word = 32 / bits_;
    const uint32_t mask = (uint32_t{1} << bits_) - 1;
    for (int64_t word = 0, column = 0; column < length; ++word) {
      uint32_t packed = load_raw<uint32_t>(words_, index(word, row));
      for (int k = 0; k < per_word && column < length; ++k, ++column) emit(column, (packed >> (k * bits_)) & mask);
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
  int64_t index(int64_t word, int64_t across) const {
    return grid_.packed_dim == 0 ? word * stored_columns_ + across : across * stored_columns_ + word;
  }

  const PackedGrid& grid_;
  const std::byte* words_;
  int64_t stored_columns_;
  int bits_;
};

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

/// Row `row`'s value of every (group, stored code): scale x (code - zero), rounded to the scales' dtype.
template <DType kResult>
void fill_table(const ScaleLink& link, const Geometry& shape, const std::vector<float>& scales,
                const std::optional<GridCodes>& zeros, int64_t row, std::vector<NarrowValue<kResult>>& table) {
  const ZeroPointCodes& codes = *link.zero_point;
  const int64_t levels = int64_t{1} << link.bits;
  for (int64_t group = 0; group < shape.groups; ++group) {
    int64_t zero = zeros ? int64_t{zeros->stored(row, group)} + codes.zeros->offset : 0;
    float scale = scales[static_cast<size_t>(row * shape.groups + group)];
    // (code - zero) has at most 9 significant bits and the scale at most 24: a float16 or bfloat16 scale's product
    // is exact in float32, a float32 one's rounded once, as the kernels' own product.
    for (int64_t code = 0; code < levels; ++code)
      table[static_cast<size_t>(group * levels + code)] =
          narrow_value<kResult>(static_cast<float>(code + codes.codes.offset - zero) * scale);
  }
}

}  // namespace

TensorStats zero_point_stats(const ZeroPointParts& parts, const ScaleLink& link, const std::filesystem::path& file,
                             std::string_view weight) {
  const Mismatch mismatch(file, weight);
  const Geometry shape = geometry(parts, link, mismatch);
  const std::vector<int32_t> groups = groups_of_columns(parts, shape, mismatch);
  const std::vector<float> scales = scales_by_row(parts, *link.zero_point, shape);
  const GridCodes codes(link.zero_point->codes, parts.codes, link.bits);
  std::optional<GridCodes> zeros;
  if (parts.zeros) zeros.emplace(*link.zero_point->zeros, *parts.zeros, link.bits);
  return for_result_dtype(parts.scales.dtype(), [&]<DType kResult>() {
    return table_stats<kResult>(
        shape.rows, shape.columns, static_cast<uint64_t>(shape.rows * shape.columns),
        static_cast<size_t>(shape.groups << link.bits),
        [&](int64_t row, auto& table) { fill_table<kResult>(link, shape, scales, zeros, row, table); },
        [&](int64_t row, const auto& table, auto* out, int64_t length) {
          codes.decode_row(row, length, [&](int64_t column, uint32_t code) {
            out[column] = table[(static_cast<size_t>(groups[static_cast<size_t>(column)]) << link.bits) | code];
          });
        });
  });
}

}  // namespace precdetect
