#include "precdetect/analyze/quanto_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "precdetect/analyze/narrow_rounding.h"
#include "precdetect/analyze/scalar_stats.h"
#include "precdetect/analyze/widen.h"
#include "precdetect/core/parallel.h"

namespace precdetect {
namespace {

constexpr uint64_t kPartValues = uint64_t{1} << 20;  // values a core takes at least

/// Where each unpacked code lies: quanto's PackedTensor stores row r of the `rows` rows in packed row r mod P (P,
/// the stored rows, is ceil(rows x bits / 8)) at bit bits x (r div P); 8-bit codes are stored as they are.
struct CodeGrid {
  const uint8_t* bytes;
  int64_t packed_rows, columns;
  int bits;
  uint32_t code(int64_t row, int64_t column) const {
    const uint8_t byte = bytes[(row % packed_rows) * columns + column];
    return bits == 8 ? byte : (byte >> (bits * (row / packed_rows))) & ((1U << bits) - 1);
  }
};

/// What one code of one block becomes, as dequantize() computes it in the scales' dtype.
struct Dequantizer {
  QuantoType type;
  DType scale_dtype;
  std::vector<float> scales, float_shifts;
  const uint8_t* integer_shifts = nullptr;  // a zero point per block (uint8), else the float shifts
  const std::vector<float>* fp8 = nullptr;  // qfloat8: each stored byte's value

  double value(uint32_t code, uint64_t block) const {
    const double scale = scales[block];
    switch (type) {
      case QuantoType::kInt8:
        return rounded_to(scale_dtype, scale * static_cast<int8_t>(code));
      case QuantoType::kFloat8E4M3:
      case QuantoType::kFloat8E5M2:
        return rounded_to(scale_dtype, scale * (*fp8)[code]);  // fp8 to the scales' dtype is exact
      default:
        break;
    }
    if (integer_shifts != nullptr) {  // int8 codes minus int8 zero points, wrapping as torch's int8 does
      const auto difference =
          static_cast<int8_t>(static_cast<int8_t>(code) - static_cast<int8_t>(integer_shifts[block]));
      return rounded_to(scale_dtype, scale * difference);
    }
    return rounded_to(scale_dtype, rounded_to(scale_dtype, scale * code) - float_shifts[block]);
  }
};

Dequantizer dequantizer(const QuantoValues& values, const ScaleLink& link) {
  Dequantizer result{.type = link.quanto->type, .scale_dtype = values.scales.dtype()};
  result.scales.resize(values.scales.numel());
  widen(values.scales, 0, result.scales.size(), result.scales.data());
  if (link.quanto->type == QuantoType::kFloat8E4M3) result.fp8 = &decoded_values(DType::F8_E4M3);
  if (link.quanto->type == QuantoType::kFloat8E5M2) result.fp8 = &decoded_values(DType::F8_E5M2);
  if (values.shifts == nullptr) return result;
  if (values.shifts->dtype() == DType::U8) {
    result.integer_shifts = reinterpret_cast<const uint8_t*>(values.shifts->data());
  } else {
    result.float_shifts.resize(values.shifts->numel());
    widen(*values.shifts, 0, result.float_shifts.size(), result.float_shifts.data());
  }
  return result;
}

/// Rows [begin, end): each block's codes counted, each code's value then formed once; a block shorter than its
/// table (one value per scale) value by value.
TensorStats rows_stats(const CodeGrid& grid, const Dequantizer& dequantizer, const ScaleLink& link, int64_t begin,
                       int64_t end) {
  TensorStats stats;
  const int64_t blocks_per_row = grid.columns / link.block_cols;
  std::vector<uint64_t> counts(size_t{1} << grid.bits);
  for (int64_t row = begin; row < end; ++row)
    for (int64_t block = 0; block < blocks_per_row; ++block) {
      const auto scale_index = static_cast<uint64_t>((row / link.block_rows) * blocks_per_row + block);
      const int64_t first = block * link.block_cols, last = first + link.block_cols;
      if (link.block_cols < static_cast<int64_t>(counts.size())) {
        for (int64_t column = first; column < last; ++column)
          add_magnitude(stats, std::fabs(dequantizer.value(grid.code(row, column), scale_index)));
        continue;
      }
      std::fill(counts.begin(), counts.end(), 0);
      for (int64_t column = first; column < last; ++column) ++counts[grid.code(row, column)];
      for (uint32_t code = 0; code < counts.size(); ++code)
        if (counts[code] > 0) add_magnitude(stats, std::fabs(dequantizer.value(code, scale_index)), counts[code]);
    }
  return stats;
}

}  // namespace

TensorStats quanto_stats(const QuantoValues& values, const ScaleLink& link) {
  const int64_t packed_rows = values.codes.shape()[0];
  const CodeGrid grid{.bytes = reinterpret_cast<const uint8_t*>(values.codes.data()),
                      .packed_rows = packed_rows,
                      .columns = static_cast<int64_t>(values.codes.numel()) / packed_rows,
                      .bits = link.bits};
  const Dequantizer values_of = dequantizer(values, link);
  const int64_t rows = link.quanto->rows;
  TensorStats total = reduce_in_parallel(
      static_cast<uint64_t>(rows), std::max<uint64_t>(1, kPartValues / static_cast<uint64_t>(grid.columns)),
      [&](uint64_t first, uint64_t last) {
        return rows_stats(grid, values_of, link, static_cast<int64_t>(first), static_cast<int64_t>(last));
      });
  total.exactness_checked = total.bf16_exact = total.fp16_exact = 0;
  return total;
}

}  // namespace precdetect
