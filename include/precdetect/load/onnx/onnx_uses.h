#pragma once
/// How an ONNX graph uses each tensor it stores (an initializer, a Constant's value): what makes it a trained
/// weight is that an operator computes with it as one, not whether the exporter wrote it as an initializer or as a
/// Constant node (Paddle2ONNX and spox keep every weight in Constants; tf2onnx and jax2tf write masks and shapes as
/// initializers). A stored value is a weight where
///   - an operator takes it at a weight input (OnnxUses' table: Conv's and ConvTranspose's W and B, MatMul's,
///     Gemm's, the recurrent layers' W, R and B, an embedding's table (Gather's data), the normalizations' scale and
///     bias, the quantized operators' weights, onnxruntime's fused ones), or
///   - it reaches such an input through operators that pass it on unchanged in value or layout only (Cast,
///     Transpose, Reshape, Identity, Squeeze, Unsqueeze, Flatten, DequantizeLinear ...), or
///   - it is added to the output of an operator that multiplies by a stored weight (a Linear's bias after its
///     MatMul, maybe passed on, as a QDQ model's QuantizeLinear and DequantizeLinear pass it), or multiplies a
///     normalized value (a normalization's scale where the exporter decomposed it: x / std, x * rsqrt(var)), or is
///     added to that product (its shift).
/// A stored value the graph reads any other way (a shape, axes, indices, a mask's lowest value, a table it
/// computes with) is the exporter's, and one it never reads is as stored. Subgraphs (If's branches, Loop's and
/// Scan's bodies) count: a name a subgraph reads is its own value where it defines it, else its enclosing graph's.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace precdetect {

/// How a graph uses one stored value.
enum class OnnxUse : uint8_t {
  kUnread,  ///< no node reads it
  kWeight,  ///< an operator computes with it as a weight (above)
  kOther,   ///< read, never as a weight: a shape, a mask, indices
};

/// The nodes of a model's graphs, gathered as they are walked, and the uses of its stored values they make.
class OnnxUses {
 public:
  /// The graph of scope `scope` is a subgraph of the one of scope `enclosing` (the model's graph: "").
  void subgraph(const std::string& scope, const std::string& enclosing);
  /// A node of the graph of scope `scope`: its operator (`standard`: of the ai.onnx domain, else of onnxruntime's
  /// com.microsoft or another), its inputs and outputs as the graph names them (an empty input: absent).
  void node(const std::string& scope, std::string_view op_type, std::string_view domain,
            const std::vector<std::string_view>& inputs, const std::vector<std::string_view>& outputs);
  /// The value `name` is stored in the graph of scope `scope` (an initializer).
  void stored(const std::string& scope, std::string_view name);
  /// How the stored value `scoped` (its scope and its name) is used. Call once every node and stored value is given.
  OnnxUse use(const std::string& scoped);
  /// The scoped value an input `name` of a node of scope `scope` reads: its own graph's where it defines it, else
  /// the nearest enclosing graph's that does (else the model graph's).
  std::string resolve(const std::string& scope, const std::string& name) const;

 private:
  struct Node {
    std::string_view op_type;  ///< as one of the tables' names (their storage), or empty for any other operator
    std::vector<std::string> inputs, outputs;  ///< scoped; inputs resolved when first asked
    std::string scope;
    bool resolved = false;
  };
  void resolve_all();
  bool weight_use(const std::string& value, std::set<std::string>& seen);
  bool feeds_weight_input(const Node& node, size_t input, std::set<std::string>& seen);
  std::string_view producer(const std::string& value) const;
  /// The value `value` is passed on from: back through the pass-through operators that produced it, to a stored
  /// value or another operator's output (a few steps at most).
  std::string passed_from(const std::string& value) const;
  bool multiplies_stored(const std::string& value) const;
  bool normalized(const std::string& value, int depth) const;

  std::map<std::string, std::string> enclosing_;  ///< a subgraph's scope -> its enclosing graph's
  std::set<std::string> defined_;                 ///< scoped values stored or computed in their graph
  std::set<std::string> stored_;                  ///< scoped values stored (initializers, Constants' outputs)
  std::vector<Node> nodes_;
  std::map<std::string, std::vector<std::pair<size_t, size_t>>> consumers_;  ///< value -> (node, input)
  std::map<std::string, size_t> producers_;                                  ///< value -> node
  bool resolved_ = false;
};

}  // namespace precdetect
