#include "precdetect/load/zero_point_codes.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

namespace precdetect {
namespace {

using Names = std::unordered_map<std::string, size_t>;

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
/// [out, in]; asymmetric zero points likewise along the outputs of [out, groups]. The bits are those every config
/// group of the checkpoint shares: a module's group is chosen by its class, which a checkpoint does not record.
std::optional<Method> compressed_tensors(const nlohmann::json& settings) {
  if (!settings.contains("config_groups") || !settings["config_groups"].is_object()) return std::nullopt;
  std::set<int64_t> bits;
  int64_t group_size = 0;
  bool packed = text(settings, "format") == "pack-quantized";
  for (const auto& [name, group] : settings["config_groups"].items()) {
    packed = packed || text(group, "format") == "pack-quantized";
    if (!group.is_object() || !group.contains("weights")) continue;
    if (text(group["weights"], "type") != "int") return std::nullopt;
    bits.insert(integer(group["weights"], "num_bits").value_or(0));
    group_size = integer(group["weights"], "group_size").value_or(0);
  }
  if (!packed || bits.size() != 1 || *bits.begin() < 1 || *bits.begin() > 8) return std::nullopt;
  int offset = -(1 << (*bits.begin() - 1));
  return Method{.codes = ".weight_packed",
                .scales = ".weight_scale",
                .zeros = ".weight_zero_point",
                .shape = ".weight_shape",
                .bits = static_cast<int>(*bits.begin()),
                .group_size = group_size,
                .layout = {.codes = {.offset = offset}, .zeros = PackedGrid{.packed_dim = 0, .offset = offset}},
                .symmetric = true};
}

std::optional<Method> method_of(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("quantization_config")) return std::nullopt;
  const nlohmann::json& settings = config["quantization_config"];
  std::string method = text(settings, "quant_method");
  if (method == "gptq") return gptq(settings);
  if (method == "awq") return awq(settings);
  if (method == "compressed-tensors") return compressed_tensors(settings);
  return std::nullopt;
}

bool is_words(const TensorRecord& record) {
  return (record.dtype == DType::I32 || record.dtype == DType::U32) && record.shape.size() == 2;
}

/// The part of `module` named by `suffix` (empty: none wanted), marked as quantization state; "" when absent.
std::string part(std::vector<TensorRecord>& tensors, const Names& names, const std::string& module,
                 const std::string& suffix) {
  if (suffix.empty()) return "";
  auto found = names.find(module + suffix);
  if (found == names.end()) return "";
  TensorRecord& record = tensors[found->second];
  record.role = TensorRole::kScale;
  record.role_from_file = true;
  return record.name;
}

void link(TensorRecord& weight, std::vector<TensorRecord>& tensors, const Names& names, const Method& method) {
  std::string module = weight.name.substr(0, weight.name.size() - method.codes.size());
  auto scales = names.find(module + method.scales);
  if (scales == names.end() || dtype_kind(tensors[scales->second].dtype) != DTypeKind::kFloat) return;
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
  std::optional<Method> method = method_of(config);
  if (!method) return;
  Names names;
  for (size_t i = 0; i < tensors.size(); ++i) names.emplace(tensors[i].name, i);
  for (TensorRecord& weight : tensors)
    if (is_words(weight) && weight.name.ends_with(method->codes)) link(weight, tensors, names, *method);
}

}  // namespace precdetect
