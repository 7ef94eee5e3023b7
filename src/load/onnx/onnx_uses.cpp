#include "precdetect/load/onnx/onnx_uses.h"

#include <algorithm>
#include <iterator>
#include <span>

namespace precdetect {
namespace {

/// The inputs of an operator that are a model's trained weights, by position [first, last]: of the ai.onnx domain
/// (`microsoft` false) or of onnxruntime's com.microsoft (its fused and quantized operators).
struct WeightInputs {
  std::string_view op_type;
  size_t first, last;
  bool microsoft = false;
};
// BatchNormalization's mean and variance (inputs 3 and 4) are statistics; a QLinear operator's scales and zero
// points are the quantization's (DequantizeLinear's, quantize/dequantize_linear.cpp); MatMul's and Einsum's every
// operand, as either may be the stored one.
constexpr size_t kAll = SIZE_MAX;
constexpr WeightInputs kWeightInputs[] = {{"Conv", 1, 2},
                                          {"ConvTranspose", 1, 2},
                                          {"MatMul", 0, 1},
                                          {"Gemm", 0, 2},
                                          {"Einsum", 0, kAll},
                                          {"LSTM", 1, 3},
                                          {"GRU", 1, 3},
                                          {"RNN", 1, 3},
                                          {"Gather", 0, 0},
                                          {"BatchNormalization", 1, 2},
                                          {"LayerNormalization", 1, 2},
                                          {"InstanceNormalization", 1, 2},
                                          {"GroupNormalization", 1, 2},
                                          {"RMSNormalization", 1, 1},
                                          {"MatMulInteger", 0, 1},
                                          {"ConvInteger", 1, 1},
                                          {"QLinearConv", 3, 3},
                                          {"QLinearConv", 8, 8},
                                          {"QLinearMatMul", 0, 0},
                                          {"QLinearMatMul", 3, 3},
                                          {"SimplifiedLayerNormalization", 1, 1},
                                          {"SkipLayerNormalization", 2, 4, true},
                                          {"SkipSimplifiedLayerNormalization", 2, 3, true},
                                          {"EmbedLayerNormalization", 2, 6, true},
                                          {"Attention", 1, 2, true},
                                          {"MultiHeadAttention", 3, 3, true},
                                          {"QGemm", 3, 3, true},
                                          {"FusedMatMul", 0, 1, true},
                                          {"FusedConv", 1, 2, true},
                                          {"FusedGemm", 0, 2, true},
                                          {"MatMulNBits", 1, 1, true},
                                          {"DynamicQuantizeMatMul", 1, 1, true},
                                          {"BiasGelu", 1, 1, true},
                                          {"FastGelu", 1, 1, true}};

/// Operators whose output is their first input's values, cast, moved or reshaped: a weight passed through them
/// stays one. DequantizeLinear's output is its codes' values, QuantizeLinear's its input's rounded (a QDQ model that
/// keeps a float weight quantizes it in the graph, and quantizes a product again before its bias is added).
constexpr std::string_view kPassThrough[] = {"Cast",       "CastLike",         "Transpose",     "Reshape", "Identity",
                                             "Squeeze",    "Unsqueeze",        "Flatten",       "Dropout", "Expand",
                                             "Contiguous", "DequantizeLinear", "QuantizeLinear"};

/// The operators a weight multiplies in (the producers of a Linear's output, to which its bias is added).
constexpr std::string_view kMultiplying[] = {"MatMul",        "Gemm",        "Conv",          "ConvTranspose", "Einsum",
                                             "MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv",   "QGemm",
                                             "FusedMatMul",   "FusedConv",   "MatMulNBits"};

/// Operators whose output is a value divided by a statistic of itself (x / std, x * rsqrt(var)): the normalized
/// value a decomposed normalization then scales and shifts.
constexpr std::string_view kNormalizing[] = {"Div", "Reciprocal"};

constexpr int kMaxNormalizedDepth = 3;  // Mul(x, Reciprocal(...)), through a Cast: the exporters' forms
constexpr int kMaxPassedThrough = 8;    // pass-through operators followed back from a value (a Transpose and a Cast;
                                        // a QuantizeLinear and a DequantizeLinear)

bool listed(std::span<const std::string_view> names, std::string_view name) {
  return std::ranges::find(names, name) != names.end();
}

}  // namespace

void OnnxUses::subgraph(const std::string& scope, const std::string& enclosing) { enclosing_[scope] = enclosing; }

void OnnxUses::stored(const std::string& scope, std::string_view name) {
  std::string scoped = scope + std::string(name);
  defined_.insert(scoped);
  stored_.insert(std::move(scoped));
}

void OnnxUses::node(const std::string& scope, std::string_view op_type, std::string_view domain,
                    const std::vector<std::string_view>& inputs, const std::vector<std::string_view>& outputs) {
  bool standard = domain.empty() || domain == "ai.onnx";
  bool microsoft = domain == "com.microsoft";
  Node node{.scope = scope};
  // The name as one of the tables' (a view of their storage); other operators keep none.
  auto in_table = std::ranges::find_if(kWeightInputs, [&](const WeightInputs& entry) {
    return entry.op_type == op_type && (entry.microsoft ? microsoft : standard || microsoft);
  });
  if (in_table != std::end(kWeightInputs)) node.op_type = in_table->op_type;
  for (std::span<const std::string_view> names :
       {std::span<const std::string_view>(kPassThrough), std::span<const std::string_view>(kMultiplying),
        std::span<const std::string_view>(kNormalizing)}) {
    auto found = std::ranges::find(names, op_type);
    if (found != names.end() && (standard || microsoft)) node.op_type = *found;
  }
  if (standard && (op_type == "Add" || op_type == "Mul")) node.op_type = op_type == "Add" ? "Add" : "Mul";
  for (std::string_view input : inputs) node.inputs.emplace_back(input);  // resolved once every value is defined
  for (std::string_view output : outputs) {
    std::string scoped = scope + std::string(output);
    if (output.empty()) continue;
    defined_.insert(scoped);
    if (standard && op_type == "Constant") stored_.insert(scoped);
    node.outputs.push_back(std::move(scoped));
  }
  nodes_.push_back(std::move(node));
}

std::string OnnxUses::resolve(const std::string& scope, const std::string& name) const {
  std::string at = scope;
  // Each step goes to a shorter scope's graph (an enclosing scope is a prefix): the walk ends.
  while (!at.empty() && !defined_.contains(at + name)) {
    auto enclosing = enclosing_.find(at);
    if (enclosing == enclosing_.end()) return name;
    at = enclosing->second;
  }
  return at + name;
}

void OnnxUses::resolve_all() {
  for (size_t n = 0; n < nodes_.size(); ++n) {
    Node& node = nodes_[n];
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i].empty()) continue;
      node.inputs[i] = resolve(node.scope, node.inputs[i]);
      consumers_[node.inputs[i]].emplace_back(n, i);
    }
    for (const std::string& output : node.outputs) producers_.emplace(output, n);
  }
  resolved_ = true;
}

OnnxUse OnnxUses::use(const std::string& scoped) {
  if (!resolved_) resolve_all();
  if (!consumers_.contains(scoped)) return OnnxUse::kUnread;
  std::set<std::string> seen;
  return weight_use(scoped, seen) ? OnnxUse::kWeight : OnnxUse::kOther;
}

bool OnnxUses::weight_use(const std::string& value, std::set<std::string>& seen) {
  if (!seen.insert(value).second) return false;  // a cycle, which only a damaged graph has
  auto consumers = consumers_.find(value);
  if (consumers == consumers_.end()) return false;
  return std::ranges::any_of(consumers->second, [&](const std::pair<size_t, size_t>& use) {
    return feeds_weight_input(nodes_[use.first], use.second, seen);
  });
}

bool OnnxUses::feeds_weight_input(const Node& node, size_t input, std::set<std::string>& seen) {
  for (const WeightInputs& entry : kWeightInputs)
    if (entry.op_type == node.op_type && input >= entry.first && input <= entry.last) return true;
  if (listed(kPassThrough, node.op_type))
    return input == 0 && !node.outputs.empty() && weight_use(node.outputs.front(), seen);
  if (node.inputs.size() != 2) return false;
  const std::string& other = node.inputs[1 - std::min<size_t>(input, 1)];
  if (node.op_type == "Add") return multiplies_stored(other);  // a bias, or a decomposed normalization's shift
  if (node.op_type == "Mul") return normalized(other, 0);      // a decomposed normalization's scale
  return false;
}

std::string_view OnnxUses::producer(const std::string& value) const {
  auto found = producers_.find(value);
  return found == producers_.end() ? std::string_view() : nodes_[found->second].op_type;
}

std::string OnnxUses::passed_from(const std::string& value) const {
  std::string at = value;
  for (int step = 0; step < kMaxPassedThrough && !stored_.contains(at); ++step) {
    auto from = producers_.find(at);
    if (from == producers_.end() || !listed(kPassThrough, nodes_[from->second].op_type) ||
        nodes_[from->second].inputs.empty())
      return at;
    at = nodes_[from->second].inputs.front();
  }
  return at;
}

bool OnnxUses::multiplies_stored(const std::string& value) const {
  // The product, maybe passed on (a QDQ model quantizes it again: QuantizeLinear, DequantizeLinear).
  auto found = producers_.find(passed_from(value));
  if (found == producers_.end()) return false;
  const Node& node = nodes_[found->second];
  auto stored = [&](const std::string& input) { return stored_.contains(passed_from(input)); };
  if (listed(kMultiplying, node.op_type)) return std::ranges::any_of(node.inputs, stored);
  if (node.op_type != "Mul" || node.inputs.size() != 2) return false;
  return (stored(node.inputs[0]) && normalized(node.inputs[1], 0)) ||
         (stored(node.inputs[1]) && normalized(node.inputs[0], 0));
}

bool OnnxUses::normalized(const std::string& value, int depth) const {
  std::string_view op = producer(value);
  if (listed(kNormalizing, op)) return true;
  if (depth >= kMaxNormalizedDepth || (op != "Mul" && op != "Cast")) return false;
  const Node& node = nodes_[producers_.at(value)];
  return std::ranges::any_of(node.inputs, [&](const std::string& input) { return normalized(input, depth + 1); });
}

}  // namespace precdetect
