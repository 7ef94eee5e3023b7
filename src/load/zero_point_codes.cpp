#include "precdetect/load/zero_point_codes.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "precdetect/load/state_parts.h"

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

}  // namespace

void link_zero_point_codes(std::vector<TensorRecord>& tensors, const nlohmann::json& config) {
  const std::vector<Method> methods = methods_of(config);
  if (methods.empty()) return;
  Names names;
  for (size_t i = 0; i < tensors.size(); ++i) names.emplace(tensors[i].name, i);
  for (TensorRecord& weight : tensors)
    if (is_words(weight) && weight.name.ends_with(methods.front().codes)) link(weight, tensors, names, methods);
}

}  // namespace precdetect
