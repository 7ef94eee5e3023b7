// optimum-quanto's weights (quantize/quanto.h), dequantized over the values its dequantize() computes, each operation
// rounded to the scales' dtype as torch computes it there: qint8 and qfloat8 codes times their scale
// (QBytesDequantizer); qint4 and qint2 codes times their scale, minus their float shift (QBitsDequantizer), or with
// an integer shift (a zero point) scale x (code - shift) in int8.

#include "precdetect/quantize/quanto.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "precdetect/core/error.h"
#include "precdetect/kernel/widen.h"
#include "precdetect/quantize/narrow_rounding.h"
#include "precdetect/quantize/scheme.h"
#include "precdetect/quantize/state_parts.h"
#include "precdetect/quantize/table_stats.h"

namespace precdetect {
namespace {

using Names = RecordNames;

constexpr std::string_view kPacked = ".weight._data._data", kBytes = ".weight._data";

int bits_of(QuantoType type) {
  switch (type) {
    case QuantoType::kInt2:
      return 2;
    case QuantoType::kInt4:
      return 4;
    default:
      return 8;
  }
}

/// quanto's quantization map ({module: {"weights": qtype, "activations": qtype}}), which the loader merges into
/// config.json's `quantization_config`; nullptr without one.
const nlohmann::json* quantization_map(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("quantization_config")) return nullptr;
  const nlohmann::json& settings = config["quantization_config"];
  if (!settings.is_object() || !settings.contains("quantization_map")) return nullptr;
  const nlohmann::json& map = settings["quantization_map"];
  return map.is_object() ? &map : nullptr;
}

/// The qtype `map` names for `module`'s weights; nullopt without a map or an entry.
std::optional<std::string> mapped_type(const nlohmann::json* map, const std::string& module) {
  if (map == nullptr || !map->contains(module) || !(*map)[module].is_object()) return std::nullopt;
  const nlohmann::json& entry = (*map)[module];
  if (!entry.contains("weights") || !entry["weights"].is_string()) return std::nullopt;
  return entry["weights"].get<std::string>();
}

/// A quanto module's activation scales (QModuleMixin's buffers, 1 until calibrated): quantization state.
void mark_activation_scales(std::vector<TensorRecord>& tensors, const Names& names, const std::string& module) {
  for (const char* scale : {".input_scale", ".output_scale"}) state_part(tensors, names, module + scale);
}

bool is_scale_dtype(DType dtype) { return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16; }

/// An 8-bit weight's qtype, told by its stored dtype; nullopt for any other (qfloat8_e4m3fnuz's: counted, not read).
std::optional<QuantoType> byte_type(DType dtype) {
  if (dtype == DType::I8) return QuantoType::kInt8;
  if (dtype == DType::F8_E4M3) return QuantoType::kFloat8E4M3;
  if (dtype == DType::F8_E5M2) return QuantoType::kFloat8E5M2;
  return std::nullopt;
}

[[noreturn]] void mismatch(const std::string& file, const TensorRecord& codes, const std::string& detail) {
  fail(ErrorCode::kSizeMismatch, file,
       fmt::format("quanto weight `{}` of shape [{}]: {}", codes.name, fmt::join(codes.shape, ", "), detail));
}

/// 2 or 4 bits: the map's, which must fit the packed rows (ceil(rows x bits / 8)), else the one width that fits.
/// nullopt where both fit (one or two rows of groups): not read by a guess.
std::optional<QuantoType> packed_type(const TensorRecord& codes, int64_t rows, const std::optional<std::string>& map,
                                      const std::string& file) {
  auto fits = [&](QuantoType type) { return (rows * bits_of(type) + 7) / 8 == codes.shape[0]; };
  if (map) {
    std::optional<QuantoType> named = *map == "qint4"   ? std::optional(QuantoType::kInt4)
                                      : *map == "qint2" ? std::optional(QuantoType::kInt2)
                                                        : std::nullopt;
    if (!named || !fits(*named))
      mismatch(file, codes, fmt::format("the quantization map's `{}` does not fit {} rows of codes", *map, rows));
    return named;
  }
  bool four = fits(QuantoType::kInt4), two = fits(QuantoType::kInt2);
  if (!four && !two) mismatch(file, codes, fmt::format("{} rows of scales fit no 2- or 4-bit packing", rows));
  if (four && two) return std::nullopt;
  return four ? QuantoType::kInt4 : QuantoType::kInt2;
}

/// The scales' blocks over the unpacked codes, `rows` by the stored columns: one scale for the whole tensor, one
/// per row, or (a single row, which quanto's optimizers scale column by column) one per value.
std::pair<int64_t, int64_t> scale_blocks(const TensorRecord& codes, const TensorRecord& scale, int64_t rows,
                                         const std::string& file) {
  int64_t columns = static_cast<int64_t>(codes.numel) / codes.shape[0];
  bool trailing_equal = scale.shape.size() == codes.shape.size() &&
                        std::equal(scale.shape.begin() + 1, scale.shape.end(), codes.shape.begin() + 1);
  if (scale.numel == 1) return {rows, columns};
  if (!scale.shape.empty() && scale.shape[0] == rows && scale.numel == static_cast<uint64_t>(rows)) return {1, columns};
  if (rows == 1 && trailing_equal && scale.numel == static_cast<uint64_t>(columns)) return {1, 1};
  mismatch(file, codes,
           fmt::format("scale `{}` of shape [{}] fits neither one scale per row of its {} rows nor one in all",
                       scale.name, fmt::join(scale.shape, ", "), rows));
}

/// Links `codes` (a record named `module` + kPacked or kBytes) to its scale and shift, renamed `module.weight` (a
/// name then taken: a second set of codes for the module is left as stored).
void link(TensorRecord& codes, std::vector<TensorRecord>& tensors, Names& names, const nlohmann::json* map,
          const std::string& module, bool packed, const std::string& file) {
  const std::string weight = module + ".weight";
  TensorRecord* scale = state_part(tensors, names, weight + "._scale");
  TensorRecord* shift = state_part(tensors, names, weight + "._shift");
  mark_activation_scales(tensors, names, module);
  if (scale == nullptr || !is_scale_dtype(scale->dtype) || names.contains(weight) || codes.shape.empty() ||
      codes.numel == 0)
    return;  // not read: counted as stored
  std::optional<std::string> mapped = mapped_type(map, module);
  std::optional<QuantoType> type;
  int64_t rows = codes.shape[0];
  if (packed) {
    if (shift == nullptr || (shift->dtype != scale->dtype && shift->dtype != DType::U8) || scale->shape.empty()) return;
    if (shift->shape != scale->shape)
      mismatch(file, codes,
               fmt::format("shift `{}` of shape [{}] is not its scale's [{}]", shift->name,
                           fmt::join(shift->shape, ", "), fmt::join(scale->shape, ", ")));
    rows = scale->shape[0];
    type = packed_type(codes, rows, mapped, file);
  } else {
    type = byte_type(codes.dtype);
    if (type && mapped && *mapped != quanto_type_name(*type))
      mismatch(file, codes,
               fmt::format("the quantization map's `{}` is not its stored {}", *mapped, dtype_name(codes.dtype)));
  }
  if (!type) return;
  auto [block_rows, block_cols] = scale_blocks(codes, *scale, rows, file);
  codes.scaled_by = ScaleLink{
      .tensor = scale->name,
      .block_rows = block_rows,
      .block_cols = block_cols,
      .scheme = ScaleScheme::kQuanto,
      .bits = bits_of(*type),
      .quanto = QuantoCodes{.type = *type, .codes = codes.name, .shift = packed ? shift->name : "", .rows = rows}};
  codes.name = weight;
  names.emplace(weight, static_cast<size_t>(&codes - tensors.data()));
}

// Reading: the dequantized values' statistics.

/// A quanto weight's tensors as read: its stored codes, scales and, for 2 and 4 bits, shifts (else nullptr).
struct QuantoValues {
  const HostValues& codes;
  const HostValues& scales;
  const HostValues* shifts = nullptr;
};

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

TensorStats stats_of_parts(const QuantoValues& values, const ScaleLink& link) {
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

/// Links every quanto weight of `tensors`. A 4- or 2-bit weight's bits are those `config`'s
/// `quantization_config.quantization_map` (quanto's quantization_map(model), merged in by the loader) names for its
/// module, else the one width its packed rows fit; where both fit, the codes are counted, never read by a guess.
/// Throws Error(kSizeMismatch) naming `file` and the tensors when codes, scales and shifts do not fit one another or
/// the map's qtype.
void link_quanto(std::vector<TensorRecord>& tensors, const nlohmann::json& config, const std::string& file) {
  Names names;
  for (size_t i = 0; i < tensors.size(); ++i) names.emplace(tensors[i].name, i);
  const nlohmann::json* map = quantization_map(config);
  // Modules the map names whose weights are not quantized (activations only) keep float weights, read as any other.
  if (map != nullptr)
    for (const auto& entry : map->items()) mark_activation_scales(tensors, names, entry.key());
  for (TensorRecord& record : tensors) {
    bool packed = record.dtype == DType::U8 && record.name.ends_with(kPacked);
    if (!packed && !record.name.ends_with(kBytes)) continue;
    std::string module = record.name.substr(0, record.name.size() - (packed ? kPacked : kBytes).size());
    link(record, tensors, names, map, module, packed, file);
  }
}

/// An optimum-quanto weight's values from its codes, scales and shifts.
TensorStats quanto_stats(const LinkedValues& values) {
  const ScaleLink& link = values.link();
  HostValues codes = values.weight(), scale = values.part(link.tensor);
  std::optional<HostValues> shifts = values.optional_part(link.quanto->shift);
  return stats_of_parts({.codes = codes, .scales = scale, .shifts = shifts ? &*shifts : nullptr}, link);
}

constexpr std::array kComputes = {ScaleScheme::kQuanto};

}  // namespace

std::string_view quanto_type_name(QuantoType type) {
  switch (type) {
    case QuantoType::kInt2:
      return "qint2";
    case QuantoType::kInt4:
      return "qint4";
    case QuantoType::kInt8:
      return "qint8";
    case QuantoType::kFloat8E4M3:
      return "qfloat8_e4m3fn";
    case QuantoType::kFloat8E5M2:
      return "qfloat8_e5m2";
  }
  return "qint8";
}

extern const QuantScheme kQuantoScheme{.name = "optimum-quanto qint2, qint4, qint8, qfloat8",
                                       .computes = kComputes,
                                       .link = link_quanto,
                                       .stats = quanto_stats};

}  // namespace precdetect
