#include "precdetect/load/quanto_codes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "precdetect/core/error.h"
#include "precdetect/load/state_parts.h"

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

}  // namespace precdetect
