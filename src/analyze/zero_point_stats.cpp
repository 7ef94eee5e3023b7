#include "precdetect/analyze/zero_point_stats.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "precdetect/analyze/grid_tables.h"
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

}  // namespace

TensorStats zero_point_stats(const ZeroPointParts& parts, const ScaleLink& link, const std::filesystem::path& file,
                             std::string_view weight) {
  const Mismatch mismatch(file, weight);
  const Geometry shape = geometry(parts, link, mismatch);
  const std::vector<float> scales = scales_by_row(parts, *link.zero_point, shape);
  const GridCodes codes(link.zero_point->codes, parts.codes, link.bits);
  std::optional<GridCodes> zeros;
  if (parts.zeros) zeros.emplace(*link.zero_point->zeros, *parts.zeros, link.bits);
  const int levels = 1 << link.bits, offset = link.zero_point->codes.offset;
  const int zero_offset = zeros ? link.zero_point->zeros->offset : 0;
  const std::vector<int32_t> groups = groups_of_columns(parts, shape, mismatch);
  // (code - zero) has at most 9 significant bits and the scale at most 24: a float16 or bfloat16 scale's product is
  // exact in float32, a float32 one's rounded once, as the kernels' own product.
  auto fill = [&](int64_t row, int32_t group, float* products) {
    int zero = zeros ? static_cast<int>(zeros->stored(row, group)) + zero_offset : 0;
    float scale = scales[static_cast<size_t>(row * shape.groups + group)];
    for (int code = 0; code < levels; ++code) products[code] = static_cast<float>(code + offset - zero) * scale;
  };
  try {
    return for_result_dtype(parts.scales.dtype(), [&]<DType kResult>() {
      return grid_table_stats<kResult>(codes, link.bits, shape.rows, groups, static_cast<int32_t>(shape.groups), fill);
    });
  } catch (const Error& e) {  // groups too many and too scattered to tabulate: named with the file and the weight
    mismatch(e.what());
  }
}

}  // namespace precdetect
