// The schemes precdetect does not read, last in the list: a tensor that config.json declares quantized (or that
// bitsandbytes' own tensor names declare so) is never analyzed as the floats or integers it is stored as. Where no
// scheme before this one linked a quantized module's weight, the weight is counted and named with its scheme
// (RecordReading::unread_scheme: not analyzed, out of the verdict, a `quantized_not_read` warning), and the tensors
// stored beside it (its scales, zero points, global scales, code maps) get the role `scale`, as a read scheme's do.
// A module is quantized when a tensor of its weight's state lies beside its weight; the activations' scales of a
// module whose weight is not quantized (quanto's, a static input scale) are quantization state too, but say
// nothing of its weight, which is read as any other.

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "precdetect/quantize/scheme.h"

namespace precdetect {
namespace {

/// A quantized weight's state beside its codes: the suffix after the module's name, and the codes' own suffix.
struct StatePart {
  std::string_view suffix, codes;
};

// What quantizers store beside a weight they quantized: compressed-tensors (weight_scale, weight_zero_point,
// weight_global_scale, weight_shape), FineGrainedFP8 (weight_scale_inv), MLX (scales, biases), GPTQ and AWQ
// (scales, qzeros, g_idx), bitsandbytes (absmax, quant_map, nested_*, SCB, weight_format), optimum-quanto
// (weight._scale, weight._shift), torchao's safetensors (_weight_scale, _weight_zero_point), gpt-oss's MXFP4
// (NAME_scales beside NAME_blocks), compressed-tensors' sparse formats (bitmask, shape, row_offsets and the scales
// beside `compressed`; marlin-24's scale_packed and meta beside weight_packed), AMD Quark (nvfp4's second-level
// weight_scale_2; the qscales and qqzeros its AWQ export writes under transformers 5.6 and later, which its own
// exporter warns its importer may not read).
constexpr std::array<StatePart, 33> kWeightState = {{
    {".weight_scale", ".weight"},
    {".weight_scale", ".weight_packed"},
    {".weight_scale_inv", ".weight"},
    {".weight_zero_point", ".weight"},
    {".weight_zero_point", ".weight_packed"},
    {".weight_global_scale", ".weight"},
    {".weight_global_scale", ".weight_packed"},
    {".weight_shape", ".weight_packed"},
    {".scales", ".weight"},
    {".biases", ".weight"},
    {".scales", ".qweight"},
    {".qzeros", ".qweight"},
    {".g_idx", ".qweight"},
    {".weight.absmax", ".weight"},
    {".weight.quant_map", ".weight"},
    {".weight.nested_absmax", ".weight"},
    {".weight.nested_quant_map", ".weight"},
    {".SCB", ".weight"},
    {".weight_format", ".weight"},
    {".weight._scale", ".weight._data"},
    {".weight._shift", ".weight._data._data"},
    {"._weight_scale", "._weight_qdata"},
    {"._weight_zero_point", "._weight_qdata"},
    {"_scales", "_blocks"},
    {".bitmask", ".compressed"},
    {".shape", ".compressed"},
    {".row_offsets", ".compressed"},
    {".weight_scale", ".compressed"},
    {".scale_packed", ".weight_packed"},
    {".meta", ".weight_packed"},
    {".weight_scale_2", ".weight"},
    {".qscales", ".qweight"},
    {".qqzeros", ".qweight"},
}};

// Activations' scales (compressed-tensors' static input scales, quanto's, the KV cache's, Quark's second-level
// input scales): quantization state that says nothing of the module's weight.
constexpr std::array<std::string_view, 9> kActivationState = {
    ".input_scale", ".input_global_scale", ".input_zero_point", ".output_scale", ".output_zero_point", ".k_scale",
    ".v_scale",     ".input_scale_2",      ".output_scale_2"};

std::string text_of(const nlohmann::json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return "";
  return object[key].get<std::string>();
}

/// torchao's quantization type as transformers' TorchAoConfig saves it: a string, or a config object's `_type`
/// (under "default" where it is per module).
std::string torchao_type(const nlohmann::json& settings) {
  if (!settings.contains("quant_type")) return "";
  const nlohmann::json& type = settings["quant_type"];
  if (type.is_string()) return type.get<std::string>();
  if (!type.is_object()) return "";
  if (type.contains("default")) return text_of(type["default"], "_type");
  return text_of(type, "_type");
}

/// The scheme config.json declares for its weights: `quantization_config`'s quant_method with what tells its kind
/// (compressed-tensors' format, torchao's type), or MLX's `quantization` with its mode; empty where it declares none.
std::string declared_scheme(const nlohmann::json& config) {
  if (!config.is_object()) return "";
  if (config.contains("quantization_config") && config["quantization_config"].is_object()) {
    const nlohmann::json& settings = config["quantization_config"];
    std::string method = text_of(settings, "quant_method");
    std::string kind = method == "torchao" ? torchao_type(settings) : text_of(settings, "format");
    if (kind.empty() && settings.contains("sparsity_config"))  // compressed-tensors' sparse weights alone
      kind = text_of(settings["sparsity_config"], "format");
    if (!method.empty()) return kind.empty() ? method : method + " " + kind;
  }
  if (config.contains("quantization") && config["quantization"].is_object()) {  // mlx-lm's (also copied above)
    std::string mode = text_of(config["quantization"], "mode");
    return "MLX " + (mode.empty() ? std::string("affine") : mode);
  }
  return "";
}

/// Marks `codes` (a module's weight, unless a scheme linked it) as quantized by `scheme`, not read.
void mark_unread(Linking& model, const TensorRecord& codes, const std::string& scheme) {
  if (model.linked(codes) || codes.role != TensorRole::kModel || !model.reading(codes).unread_scheme.empty()) return;
  model.unread(codes, scheme);
}

/// bitsandbytes' 4-bit weights are declared by their state's name alone: `X.weight.quant_state.bitsandbytes__nf4`.
void mark_bitsandbytes_states(Linking& model) {
  constexpr std::string_view kState = ".quant_state.bitsandbytes__";
  for (const TensorRecord& state : model.tensors()) {
    size_t at = state.name.find(kState);
    if (at == std::string::npos) continue;
    std::string weight = state.name.substr(0, at);
    model.part(state.name);
    for (const char* part : {".absmax", ".quant_map", ".nested_absmax", ".nested_quant_map"}) model.part(weight + part);
    if (const TensorRecord* found = model.find(weight))
      mark_unread(model, *found, "bitsandbytes " + state.name.substr(at + kState.size()));
  }
}

void link_unread(Linking& model) {
  mark_bitsandbytes_states(model);
  const std::string scheme = declared_scheme(model.config());
  if (scheme.empty()) return;  // without a declaration, names alone do not make a tensor quantization state
  for (size_t i = 0; i < model.tensors().size(); ++i) {
    const std::string name = model.tensors()[i].name;  // a copy: part() may mark the record it names
    for (std::string_view suffix : kActivationState)
      if (name.ends_with(suffix)) model.part(name);
    for (const StatePart& part : kWeightState) {
      if (!name.ends_with(part.suffix)) continue;
      const TensorRecord* codes =
          model.find(name.substr(0, name.size() - part.suffix.size()) + std::string(part.codes));
      if (codes == nullptr) continue;
      model.part(name);
      mark_unread(model, *codes, scheme);
    }
  }
}

}  // namespace

extern const QuantScheme kUnreadScheme{.name = "quantized weights of schemes precdetect does not read: counted",
                                       .link = link_unread};

}  // namespace precdetect
