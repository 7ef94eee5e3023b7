#include "precdetect/analyze/scaled_stats.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "precdetect/analyze/cpu_kernel.h"
#include "precdetect/analyze/grid_tables.h"
#include "precdetect/analyze/scalar_stats.h"
#include "precdetect/analyze/widen.h"
#include "precdetect/core/parallel.h"

namespace precdetect {
namespace {

constexpr uint64_t kChunkValues = uint64_t{1} << 20;  // values per part a core takes at least
constexpr int64_t kMagnitudeCodes = 128;              // an fp8 byte without its sign bit
/// Below this many values per block a block's histogram costs more than multiplying its values one by one.
constexpr int64_t kMinHistogramBlock = 1024;

struct Shape {
  int64_t rows, columns, scale_columns;
};

Shape shape_of(const HostValues& weight, const ScaleLink& link) {
  int64_t rows = weight.shape().empty() ? 1 : weight.shape().front();
  int64_t columns = rows == 0 ? 0 : static_cast<int64_t>(weight.numel()) / rows;
  return {rows, columns, (columns + link.block_cols - 1) / link.block_cols};
}

/// Rows [begin, end) (whole bands of block_rows) through one magnitude histogram per block: every value of a block
/// shares its scale, so |stored x scale| takes at most 128 values there, each the float32 product the kernels form.
TensorStats histogram_bands(const std::byte* data, const Shape& shape, const std::vector<float>& scales,
                            const ScaleLink& link, const std::vector<float>& magnitudes, int64_t begin, int64_t end) {
  TensorStats stats;
  std::vector<uint64_t> counts(static_cast<size_t>(shape.scale_columns * kMagnitudeCodes));
  for (int64_t band = begin; band < end; band += link.block_rows) {
    std::fill(counts.begin(), counts.end(), 0);
    for (int64_t row = band; row < std::min(end, band + link.block_rows); ++row) {
      const auto* bytes = reinterpret_cast<const uint8_t*>(data) + row * shape.columns;
      for (int64_t block = 0; block < shape.scale_columns; ++block) {
        uint64_t* histogram = counts.data() + block * kMagnitudeCodes;
        int64_t first = block * link.block_cols, last = std::min(shape.columns, first + link.block_cols);
        for (int64_t column = first; column < last; ++column) ++histogram[bytes[column] & 0x7f];
      }
    }
    const float* band_scales = scales.data() + (band / link.block_rows) * shape.scale_columns;
    for (int64_t block = 0; block < shape.scale_columns; ++block) {
      float scale = std::fabs(band_scales[block]);
      for (int64_t code = 0; code < kMagnitudeCodes; ++code)
        if (uint64_t count = counts[block * kMagnitudeCodes + code])
          add_magnitude(stats, static_cast<double>(magnitudes[code] * scale), count);
    }
  }
  return stats;
}

/// Rows [begin, end) value by value: widened, multiplied by their scale in float32, then the F32 kernel.
TensorStats multiplied_rows(const HostValues& weight, const Shape& shape, const std::vector<float>& scales,
                            const ScaleLink& link, int64_t begin, int64_t end) {
  TensorStats stats;
  const int64_t rows_per_chunk =
      std::max<int64_t>(1, static_cast<int64_t>(kChunkValues) / std::max<int64_t>(shape.columns, 1));
  std::vector<float> values(static_cast<size_t>(std::min(end - begin, rows_per_chunk) * shape.columns));
  for (int64_t row = begin; row < end; row += rows_per_chunk) {
    int64_t rows = std::min(rows_per_chunk, end - row);
    widen(weight, static_cast<uint64_t>(row * shape.columns), static_cast<uint64_t>(rows * shape.columns),
          values.data());
    for (int64_t r = 0; r < rows; ++r) {
      const float* row_scales = scales.data() + ((row + r) / link.block_rows) * shape.scale_columns;
      float* out = values.data() + r * shape.columns;
      for (int64_t block = 0; block < shape.scale_columns; ++block) {
        int64_t first = block * link.block_cols, last = std::min(shape.columns, first + link.block_cols);
        for (int64_t column = first; column < last; ++column) out[column] *= row_scales[block];
      }
    }
    stats.merge(cpu_tensor_stats(values.data(), DType::F32, static_cast<uint64_t>(rows * shape.columns)));
  }
  return stats;
}

/// MLX's packed codes (a dense bit stream per row, LSB first) through a table per group: scale x q rounded to the
/// scales' dtype, plus the bias, rounded again, as mx.dequantize computes. float32 holds 2 x 11 + 2 bits: each sum
/// rounded there and then to float16 (or bfloat16) is the sum rounded once, as the double rounding theorem has it.
TensorStats affine_stats(const HostValues& weight, const HostValues& scale, const HostValues& bias,
                         const ScaleLink& link) {
  std::vector<float> scales(scale.numel()), biases(bias.numel());
  widen(scale, 0, scales.size(), scales.data());
  widen(bias, 0, biases.size(), biases.data());
  const int64_t rows = weight.shape()[0], columns = weight.shape()[1] * 32 / link.bits;
  const int64_t group_count = columns / link.block_cols;
  std::vector<int32_t> groups(static_cast<size_t>(columns));
  for (int64_t column = 0; column < columns; ++column)
    groups[static_cast<size_t>(column)] = static_cast<int32_t>(column / link.block_cols);
  const PackedGrid grid{.tensor = link.tensor};  // rows as stored, codes along them
  const GridCodes codes(grid, weight, link.bits);
  const int levels = 1 << link.bits;
  return for_result_dtype(scale.dtype(), [&]<DType kResult>() {
    return grid_table_stats<kResult>(codes, link.bits, rows, groups, static_cast<int32_t>(group_count),
                                     [&](int64_t row, int32_t group, float* products) {
                                       const auto index = static_cast<size_t>(row * group_count + group);
                                       for (int code = 0; code < levels; ++code)
                                         products[code] = scales[index] * static_cast<float>(code);
                                       round_in_place<kResult>(products, static_cast<size_t>(levels));
                                       for (int code = 0; code < levels; ++code) products[code] += biases[index];
                                     });
  });
}

TensorStats product_stats(const HostValues& weight, const HostValues& scale, const ScaleLink& link) {
  const Shape shape = shape_of(weight, link);
  std::vector<float> scales(scale.numel());
  widen(scale, 0, scales.size(), scales.data());
  bool histograms = dtype_bits(weight.dtype()) == 8 && link.block_rows * link.block_cols >= kMinHistogramBlock;
  // Parts of whole bands of block rows, so that a block's histogram is never split between two cores.
  const int64_t bands = (shape.rows + link.block_rows - 1) / link.block_rows;
  const uint64_t band_values = static_cast<uint64_t>(std::max<int64_t>(link.block_rows * shape.columns, 1));
  TensorStats total = reduce_in_parallel(
      static_cast<uint64_t>(bands), std::max<uint64_t>(1, kChunkValues / band_values),
      [&](uint64_t first, uint64_t last) {
        int64_t begin = static_cast<int64_t>(first) * link.block_rows;
        int64_t end = std::min(shape.rows, static_cast<int64_t>(last) * link.block_rows);
        return histograms
                   ? histogram_bands(weight.data(), shape, scales, link, decoded_values(weight.dtype()), begin, end)
                   : multiplied_rows(weight, shape, scales, link, begin, end);
      });
  return total;
}

}  // namespace

TensorStats scaled_stats(const HostValues& weight, const HostValues& scale, const HostValues* bias,
                         const ScaleLink& link) {
  TensorStats total = link.scheme == ScaleScheme::kAffine ? affine_stats(weight, scale, *bias, link)
                                                          : product_stats(weight, scale, link);
  total.exactness_checked = total.bf16_exact = total.fp16_exact = 0;
  return total;
}

}  // namespace precdetect
