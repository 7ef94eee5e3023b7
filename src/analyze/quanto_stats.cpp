#include "precdetect/analyze/quanto_stats.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "precdetect/analyze/narrow_rounding.h"
#include "precdetect/analyze/table_stats.h"
#include "precdetect/analyze/widen.h"

namespace precdetect {
namespace {

/// Where each unpacked code lies: quanto's PackedTensor stores row r of the `rows` rows in packed row r mod P (P,
/// the stored rows, is ceil(rows x bits / 8)) at bit bits x (r div P); 8-bit codes are stored as they are.
struct CodeGrid {
  const uint8_t* bytes;
  int64_t packed_rows, columns;
  int bits;
};

/// The scales, shifts and code values each table is formed from.
struct Parts {
  QuantoType type;
  std::vector<float> scales, float_shifts;
  const uint8_t* zero_points = nullptr;     // an integer shift (uint8) per block, else the float shifts
  const std::vector<float>* fp8 = nullptr;  // qfloat8: each stored byte's value
};

Parts parts_of(const QuantoValues& values, const ScaleLink& link) {
  Parts parts{.type = link.quanto->type};
  parts.scales.resize(values.scales.numel());
  widen(values.scales, 0, parts.scales.size(), parts.scales.data());
  if (link.quanto->type == QuantoType::kFloat8E4M3) parts.fp8 = &decoded_values(DType::F8_E4M3);
  if (link.quanto->type == QuantoType::kFloat8E5M2) parts.fp8 = &decoded_values(DType::F8_E5M2);
  if (values.shifts == nullptr) return parts;
  if (values.shifts->dtype() == DType::U8) {
    parts.zero_points = reinterpret_cast<const uint8_t*>(values.shifts->data());
  } else {
    parts.float_shifts.resize(values.shifts->numel());
    widen(*values.shifts, 0, parts.float_shifts.size(), parts.float_shifts.data());
  }
  return parts;
}

/// What each of the `codes` codes of block `block` becomes, as dequantize() computes it in the scales' dtype: a
/// float32 product of a scale and a code (or code minus zero point) is exact for float16 and bfloat16 scales and
/// rounded once for float32 ones, as torch forms it; a float shift is subtracted from the product rounded to the
/// scales' dtype, in float32, whose result rounds to that dtype as one rounding would (float32 holds more than
/// twice their precision plus two).
template <DType kResult>
void block_values(const Parts& parts, uint64_t block, std::array<float, 256>& values, int codes) {
  const float scale = parts.scales[block];
  if (parts.type == QuantoType::kInt8) {
    for (int code = 0; code < codes; ++code) values[code] = scale * static_cast<float>(static_cast<int8_t>(code));
  } else if (parts.fp8 != nullptr) {
    for (int code = 0; code < codes; ++code) values[code] = scale * (*parts.fp8)[code];
  } else if (parts.zero_points != nullptr) {  // int8 code minus int8 zero point, wrapping as torch's int8 does
    const auto zero_point = static_cast<int8_t>(parts.zero_points[block]);
    for (int code = 0; code < codes; ++code)
      values[code] = scale * static_cast<float>(static_cast<int8_t>(code - zero_point));
  } else {
    const float shift = parts.float_shifts[block];
    for (int code = 0; code < codes; ++code) values[code] = scale * static_cast<float>(code);
    round_in_place<kResult>(values.data(), static_cast<size_t>(codes));
    for (int code = 0; code < codes; ++code) values[code] -= shift;
  }
}

/// Codes of the byte row `bytes` (`columns` of them), sub-row `part` at bit bits x part, through `table`.
template <typename Table, typename Decoded>
void decode_part(const uint8_t* bytes, uint64_t columns, unsigned shift, uint32_t mask, const Table* table,
                 Decoded& decoded) {
  for (uint64_t column = 0; column < columns; ++column)
    decoded.add(table[(static_cast<uint32_t>(bytes[column]) >> shift) & mask], static_cast<unsigned>(column & 1));
}

/// A unit is one block of columns of one stored byte row, whose bytes hold the codes of up to 8 / bits rows (rows
/// p, p + P, ...; fewer in the last byte rows when P does not divide them), each with its own table: every byte is
/// loaded once for all its codes.
template <DType kResult>
TensorStats stats_for(const CodeGrid& grid, const Parts& parts, const ScaleLink& link, int64_t rows) {
  const auto block_cols = static_cast<uint64_t>(link.block_cols);
  const uint64_t blocks_per_row = static_cast<uint64_t>(grid.columns) / block_cols;
  const int codes = 1 << grid.bits, per_byte = 8 / grid.bits;
  const uint32_t mask = static_cast<uint32_t>(codes - 1);
  // The rows sharing byte row p: those of p + i x P below `rows`.
  auto parts_in = [&](int64_t packed_row) {
    return static_cast<int>(std::min<int64_t>(per_byte, (rows - packed_row + grid.packed_rows - 1) / grid.packed_rows));
  };
  return table_stats<kResult>(
      static_cast<uint64_t>(grid.packed_rows) * blocks_per_row, block_cols * static_cast<uint64_t>(per_byte),
      static_cast<size_t>(codes) * static_cast<size_t>(per_byte),
      [&](uint64_t unit, auto& tables) {
        const auto packed_row = static_cast<int64_t>(unit / blocks_per_row);
        std::array<float, 256> values;
        for (int part = 0; part < parts_in(packed_row); ++part) {
          const int64_t row = packed_row + part * grid.packed_rows;
          const auto block = static_cast<uint64_t>(row / link.block_rows) * blocks_per_row + unit % blocks_per_row;
          block_values<kResult>(parts, block, values, codes);
          narrow_magnitudes<kResult>(values.data(), static_cast<size_t>(codes), tables.data() + part * codes);
        }
      },
      [&](uint64_t unit, const auto& tables, auto& decoded) {
        const auto packed_row = static_cast<int64_t>(unit / blocks_per_row);
        const uint8_t* bytes =
            grid.bytes + packed_row * grid.columns + static_cast<int64_t>((unit % blocks_per_row) * block_cols);
        const int count = parts_in(packed_row);
        decoded.reserve(block_cols * static_cast<uint64_t>(count));
        if (count == 2 && grid.bits == 4) {  // qint4's usual byte: two codes, two tables, one load
          // The bound in a local: a count's increment (a uint64_t) could alias the captured one, reloading it.
          const uint64_t columns = block_cols;
          for (uint64_t column = 0; column < columns; ++column) {
            const uint8_t byte = bytes[column];
            decoded.add(tables[byte & 0xFU], 0);
            decoded.add(tables[16 + (byte >> 4)], 1);
          }
          return;
        }
        if (count == 1 && grid.bits == 8) {  // qint8: each row's 256 entries stand for thousands of codes
          CodeTally<256> tally;
          const uint64_t columns = block_cols;
          for (uint64_t column = 0; column < columns; ++column) tally.add(bytes[column], static_cast<unsigned>(column));
          tally.flush(tables.data(), decoded);
          return;
        }
        for (int part = 0; part < count; ++part)
          decode_part(bytes, block_cols, static_cast<unsigned>(grid.bits * part), mask, tables.data() + part * codes,
                      decoded);
      });
}

}  // namespace

TensorStats quanto_stats(const QuantoValues& values, const ScaleLink& link) {
  const int64_t packed_rows = values.codes.shape()[0];
  const CodeGrid grid{.bytes = reinterpret_cast<const uint8_t*>(values.codes.data()),
                      .packed_rows = packed_rows,
                      .columns = static_cast<int64_t>(values.codes.numel()) / packed_rows,
                      .bits = link.bits};
  const Parts parts = parts_of(values, link);
  const int64_t rows = link.quanto->rows;
  return for_result_dtype(values.scales.dtype(),
                          [&]<DType kResult>() { return stats_for<kResult>(grid, parts, link, rows); });
}

}  // namespace precdetect
