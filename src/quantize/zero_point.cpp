// GPTQ, AWQ and compressed-tensors' pack-quantized integers: codes packed in int32 words beside per-group scales
// and zero points (ScaleScheme::kZeroPoint), each weight linked to its parts so that it is analyzed as its kernels
// dequantize it: scale x (code - zero point) per group, rounded once to the scales' dtype.
// - GPTQ (`qweight` [in x bits / 32, out], `qzeros`, `scales` [groups, out], `g_idx`), the v1 zero points (stored
//   one below, as AutoGPTQ writes them) or v2 (`checkpoint_format` "gptq_v2");
// - AWQ's GEMM layout (`qweight` [in, out / 8] in AWQ's nibble order, `qzeros`, `scales`);
// - compressed-tensors' pack-quantized (`weight_packed` [out, in x bits / 32], `weight_scale`, `weight_zero_point`
//   packed along the outputs, `weight_shape`).
// Which one, and its bits, come from config.json's `quantization_config` (or GPTQ's quantize_config.json): without
// them the codes are counted, never read by a guessed layout. Shapes are checked when the values are read, where
// compressed-tensors' weight_shape is known.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <optional>
#include <unordered_map>
#include <vector>

#include "precdetect/core/error.h"
#include "precdetect/kernel/widen.h"
#include "precdetect/quantize/grid_tables.h"
#include "precdetect/quantize/scheme.h"
#include "precdetect/quantize/state_parts.h"

namespace precdetect {
namespace {

using Names = RecordNames;

/// How one method stores its weights: the suffixes of a module's tensors, and how to read them at `bits`.
struct Method {
  std::string codes, scales, zeros, group_index, shape;
  int bits = 0;
  int64_t group_size = 0;
  ZeroPointCodes layout;
  bool symmetric = false;  ///< zero points may be absent (all 0): compressed-tensors' symmetric schemes
};

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::optional<int64_t> integer(const nlohmann::json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number_integer()) return std::nullopt;
  return object[key].get<int64_t>();
}

std::string text(const nlohmann::json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return "";
  return lowercase(object[key].get<std::string>());
}

/// GPTQ: codes packed along the inputs of [in, out]; zero points along the outputs of [groups, out], stored one
/// below the zero point in v1 (AutoGPTQ's historical layout, which its kernels add back) and as they are in v2.
std::optional<Method> gptq(const nlohmann::json& settings) {
  std::optional<int64_t> bits = integer(settings, "bits");
  if (!bits || (*bits != 2 && *bits != 3 && *bits != 4 && *bits != 8)) return std::nullopt;
  int offset = text(settings, "checkpoint_format") == "gptq_v2" ? 0 : 1;
  return Method{.codes = ".qweight",
                .scales = ".scales",
                .zeros = ".qzeros",
                .group_index = ".g_idx",
                .bits = static_cast<int>(*bits),
                .group_size = integer(settings, "group_size").value_or(0),
                .layout = {.codes = {.transposed = true, .packed_dim = 0},
                           .zeros = PackedGrid{.transposed = true, .packed_dim = 1, .offset = offset},
                           .scales_transposed = true}};
}

/// AWQ's GEMM layout (AutoAWQ's WQLinear_GEMM): 4-bit codes and zero points packed along the outputs of
/// [in, out] and [groups, out], in AWQ's nibble order. Its other layouts (GEMV, Marlin) are not read.
std::optional<Method> awq(const nlohmann::json& settings) {
  std::string version = text(settings, "version");
  if (integer(settings, "bits").value_or(4) != 4 || !(version.empty() || version == "gemm")) return std::nullopt;
  PackedGrid packed{.transposed = true, .packed_dim = 1, .awq_order = true};
  return Method{.codes = ".qweight",
                .scales = ".scales",
                .zeros = ".qzeros",
                .bits = 4,
                .group_size = integer(settings, "group_size").value_or(0),
                .layout = {.codes = packed, .zeros = packed, .scales_transposed = true}};
}

/// compressed-tensors' pack-quantized integers: signed codes stored plus 2^(bits-1), packed along the inputs of
/// [out, in]; asymmetric zero points likewise along the outputs of [out, groups]. One reading per config group of
/// integer weights: a module's group is chosen by its class or a pattern of its name, which the tensors do not
/// record, so each weight takes the reading its packed and scale shapes fit (fits).
std::vector<Method> compressed_tensors(const nlohmann::json& settings) {
  if (!settings.contains("config_groups") || !settings["config_groups"].is_object()) return {};
  bool packed = text(settings, "format") == "pack-quantized";
  std::vector<Method> methods;
  for (const auto& [name, group] : settings["config_groups"].items()) {
    packed = packed || text(group, "format") == "pack-quantized";
    if (!group.is_object() || !group.contains("weights") || text(group["weights"], "type") != "int") continue;
    int64_t bits = integer(group["weights"], "num_bits").value_or(0);
    if (bits < 1 || bits > 8) continue;
    int offset = -(1 << (bits - 1));
    methods.push_back(
        Method{.codes = ".weight_packed",
               .scales = ".weight_scale",
               .zeros = ".weight_zero_point",
               .shape = ".weight_shape",
               .bits = static_cast<int>(bits),
               .group_size = integer(group["weights"], "group_size").value_or(0),
               .layout = {.codes = {.offset = offset}, .zeros = PackedGrid{.packed_dim = 0, .offset = offset}},
               .symmetric = true});
  }
  return packed ? methods : std::vector<Method>{};
}

/// The readings config.json's quantization_config names: GPTQ's or AWQ's one, compressed-tensors' per config group.
std::vector<Method> methods_of(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("quantization_config")) return {};
  const nlohmann::json& settings = config["quantization_config"];
  std::string method = text(settings, "quant_method");
  std::optional<Method> one;
  if (method == "gptq") one = gptq(settings);
  if (method == "awq") one = awq(settings);
  if (method == "compressed-tensors") return compressed_tensors(settings);
  return one ? std::vector<Method>{*one} : std::vector<Method>{};
}

/// Whether `codes` packed at `method`'s bits, with scales of `scales`' shape in its groups, can hold one weight:
/// per group, the inputs are those of the scales' groups (the last one possibly short), and must pack to the stored
/// words. A reading per channel or tensor fits any width: the weight's shape tensor decides in the analysis, as it
/// does GPTQ's and AWQ's one reading (their transposed layouts are not compressed-tensors').
bool fits(const Method& method, const TensorRecord& codes, const TensorRecord& scales) {
  if (method.layout.codes.transposed || method.group_size <= 0 || scales.shape.size() != 2) return true;
  const int64_t groups = scales.shape[1], words = codes.shape[1];
  auto words_for = [&](int64_t inputs) { return (inputs * method.bits + 31) / 32; };
  return words >= words_for((groups - 1) * method.group_size + 1) && words <= words_for(groups * method.group_size);
}

bool same_reading(const Method& a, const Method& b) {
  return a.bits == b.bits && a.group_size == b.group_size && a.symmetric == b.symmetric;
}

bool is_words(const TensorRecord& record) {
  return (record.dtype == DType::I32 || record.dtype == DType::U32) && record.shape.size() == 2;
}

/// The part of `module` named by `suffix` (empty: none wanted), marked as quantization state; "" when absent.
std::string part(std::vector<TensorRecord>& tensors, const Names& names, const std::string& module,
                 const std::string& suffix) {
  TensorRecord* record = suffix.empty() ? nullptr : state_part(tensors, names, module + suffix);
  return record ? record->name : "";
}

/// Links `weight` by the one reading among `methods` its shapes fit; none, or readings that differ: counted, not
/// guessed.
void link(TensorRecord& weight, std::vector<TensorRecord>& tensors, const Names& names,
          const std::vector<Method>& methods) {
  std::string module = weight.name.substr(0, weight.name.size() - methods.front().codes.size());
  auto scales = names.find(module + methods.front().scales);
  if (scales == names.end() || dtype_kind(tensors[scales->second].dtype) != DTypeKind::kFloat) return;
  const Method& first = methods.front();  // every reading names the same parts: quantization state either way
  for (const std::string& suffix : {first.scales, first.zeros, first.group_index, first.shape})
    part(tensors, names, module, suffix);
  const Method* chosen = nullptr;
  for (const Method& method : methods) {
    if (!fits(method, weight, tensors[scales->second])) continue;
    if (chosen && !same_reading(*chosen, method)) return;
    chosen = &method;
  }
  if (!chosen) return;
  const Method& method = *chosen;
  ZeroPointCodes layout = method.layout;
  layout.codes.tensor = weight.name;
  std::string zeros = part(tensors, names, module, method.zeros);
  if (zeros.empty() && !method.symmetric) return;
  if (zeros.empty())
    layout.zeros.reset();
  else
    layout.zeros->tensor = zeros;
  layout.group_index = part(tensors, names, module, method.group_index);
  layout.shape_tensor = part(tensors, names, module, method.shape);
  part(tensors, names, module, method.scales);
  weight.scaled_by = ScaleLink{.tensor = tensors[scales->second].name,
                               .block_rows = 1,
                               .block_cols = std::max<int64_t>(method.group_size, 0),
                               .scheme = ScaleScheme::kZeroPoint,
                               .bits = method.bits,
                               .zero_point = std::move(layout)};
}

// Reading: the dequantized values' statistics.

/// A kZeroPoint weight's tensors as read: the codes and scales always; the others where the link names them
/// (else nullptr).
struct ZeroPointParts {
  const HostValues& codes;
  const HostValues& scales;
  const HostValues* zeros = nullptr;
  const HostValues* group_index = nullptr;
  const HostValues* shape = nullptr;
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

TensorStats stats_of_parts(const ZeroPointParts& parts, const ScaleLink& link, const std::filesystem::path& file,
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

void link_zero_point_codes(std::vector<TensorRecord>& tensors, const nlohmann::json& config,
                           const std::string& /*file*/) {
  const std::vector<Method> methods = methods_of(config);
  if (methods.empty()) return;
  Names names;
  for (size_t i = 0; i < tensors.size(); ++i) names.emplace(tensors[i].name, i);
  for (TensorRecord& weight : tensors)
    if (is_words(weight) && weight.name.ends_with(methods.front().codes)) link(weight, tensors, names, methods);
}

/// A kZeroPoint weight's values from its codes, scales and the other parts its link names.
TensorStats zero_point_stats(const LinkedValues& values) {
  const ScaleLink& link = values.link();
  std::optional<HostValues> zeros = values.optional_part(link.zero_point->zeros ? link.zero_point->zeros->tensor : "");
  std::optional<HostValues> group_index = values.optional_part(link.zero_point->group_index);
  std::optional<HostValues> shape = values.optional_part(link.zero_point->shape_tensor);
  HostValues codes = values.weight(), scale = values.part(link.tensor);
  return stats_of_parts({.codes = codes,
                         .scales = scale,
                         .zeros = zeros ? &*zeros : nullptr,
                         .group_index = group_index ? &*group_index : nullptr,
                         .shape = shape ? &*shape : nullptr},
                        link, values.file(), values.record().name);
}

constexpr std::array kComputes = {ScaleScheme::kZeroPoint};

}  // namespace

extern const QuantScheme kZeroPointScheme{.name = "GPTQ, AWQ (GEMM), compressed-tensors pack-quantized",
                                          .computes = kComputes,
                                          .link = link_zero_point_codes,
                                          .stats = zero_point_stats};

}  // namespace precdetect
