#include "precdetect/load/onnx/onnx_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "precdetect/core/whole_number.h"
#include "precdetect/load/onnx/protobuf.h"

namespace precdetect {
namespace {

// Field numbers of onnx/onnx.proto (onnx 1.23), message by message.
constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kGraphNode = 1, kGraphInitializer = 5, kGraphValueInfo = 13, kGraphSparseInitializer = 15,
                   kGraphMetadata = 16;
constexpr uint32_t kValueInfoName = 1, kValueInfoMetadata = 4;
/// The operators that dequantize a weight they read, and which of their inputs are its codes, scale and zero
/// point: DequantizeLinear (QDQ models), and the QOperator format's operators onnxruntime's quantizer writes
/// (QLinearConv, QLinearMatMul, its com.microsoft QGemm and DynamicQuantizeMatMul), whose weight's scales run along
/// the output channels (Conv's axis 0, MatMul's B's last axis, QGemm's by its transB). MatMulInteger and ConvInteger
/// (quantize_dynamic's) take no scale for their weight, which a later Mul applies: kNoInput, their codes not read.
constexpr size_t kNoInput = SIZE_MAX;
struct QuantizedWeight {
  std::string_view op_type;
  size_t codes, scale, zero_point;
  int64_t axis;
};
constexpr QuantizedWeight kQuantizedWeights[] = {
    {"DequantizeLinear", 0, 1, 2, 1},       {"QLinearConv", 3, 4, 5, 0},
    {"QLinearMatMul", 3, 4, 5, -1},         {"QGemm", 3, 4, 5, 1},
    {"DynamicQuantizeMatMul", 1, 2, 3, -1}, {"MatMulInteger", 1, kNoInput, 3, 0},
    {"ConvInteger", 1, kNoInput, 3, 0}};

constexpr uint32_t kNodeInput = 1, kNodeOutput = 2, kNodeName = 3, kNodeOpType = 4, kNodeAttribute = 5, kNodeDomain = 7;
constexpr uint32_t kAttributeName = 1, kAttributeFloat = 2, kAttributeInt = 3, kAttributeString = 4,
                   kAttributeTensor = 5, kAttributeGraph = 6, kAttributeFloats = 7, kAttributeInts = 8,
                   kAttributeStrings = 9, kAttributeTensors = 10, kAttributeGraphs = 11, kAttributeSparseTensor = 22,
                   kAttributeSparseTensors = 23;
constexpr uint32_t kTensorDims = 1, kTensorDataType = 2, kTensorName = 8, kTensorRawData = 9, kTensorExternalData = 13,
                   kTensorDataLocation = 14;
constexpr uint32_t kEntryKey = 1, kEntryValue = 2;
constexpr uint32_t kSparseValues = 1, kSparseIndices = 2, kSparseDims = 3;
constexpr uint64_t kLocationExternal = 1;               // TensorProto.DataLocation.EXTERNAL
constexpr int32_t kFloat = 1, kString = 8, kInt64 = 7;  // TensorProto.DataType

/// A Constant attribute that holds the value in AttributeProto's own field `field` (encoded as `wire`), read as a
/// tensor of `data_type`: a scalar, or a list of as many values as the field holds.
struct ConstantField {
  std::string_view attribute;
  uint32_t field;
  WireType wire;
  int32_t data_type;
  bool scalar;
};

// ints are read as INT64 tensors, as the exporters' INT64 `value` tensors (shapes, indices) are: counted, never in
// the verdict, which reads floating-point tensors only. Strings are named as not read.
constexpr ConstantField kConstantFields[] = {{"value_float", kAttributeFloat, WireType::kFixed32, kFloat, true},
                                             {"value_floats", kAttributeFloats, WireType::kFixed32, kFloat, false},
                                             {"value_int", kAttributeInt, WireType::kVarint, kInt64, true},
                                             {"value_ints", kAttributeInts, WireType::kVarint, kInt64, false},
                                             {"value_string", kAttributeString, WireType::kBytes, kString, true},
                                             {"value_strings", kAttributeStrings, WireType::kBytes, kString, false}};

/// A message-valued field; throws when the field is not length-delimited. Every caller passes a field its walk holds.
const ProtoField& message(const ProtoField& field, const ProtoReader& reader) {
  if (field.wire != WireType::kBytes) reader.fail(fmt::format("field {} is not a message", field.number));
  return field;  // NOLINT(bugprone-return-const-ref-from-parameter): never a temporary (above)
}

class GraphWalker {
 public:
  explicit GraphWalker(const ByteSource& model) : source_(model) {}

  OnnxGraph walk() {
    ProtoReader reader(source_, 0, source_.size());
    while (std::optional<ProtoField> field = reader.next())
      if (field->number == kModelGraph) graph(message(*field, reader), 0, "");
    // Once every node is read: a consumer may follow the value it reads, and a graph's initializers follow its nodes.
    for (OnnxTensor& tensor : found_.tensors) tensor.use = uses_.use(tensor.name);
    for (OnnxSparse& sparse : found_.sparse) sparse.values.use = uses_.use(sparse.values.name);
    for (OnnxDequantize& node : found_.dequantized)
      for (std::string* input : {&node.codes, &node.scale, &node.zero_point})
        if (!input->empty()) *input = uses_.resolve(node.scope, *input);
    return std::move(found_);
  }

 private:
  /// A graph whose tensors are named `scope` + their name: "" for the model's graph, "<node>/<attribute>/" for a
  /// subgraph, since sibling subgraphs (an If's two branches) may each define one name.
  void graph(const ProtoField& field, int depth, const std::string& scope) {
    ProtoReader reader(source_, field);
    if (depth > kMaxOnnxGraphDepth) reader.fail(fmt::format("graphs nested more than {} deep", kMaxOnnxGraphDepth));
    if (scope.size() > kMaxOnnxScope)
      reader.fail(fmt::format("a subgraph whose scope (its nodes' names) is over {} bytes", kMaxOnnxScope));
    OnnxProvenance provenance;
    std::vector<std::pair<size_t, std::string>> initializers;  // where each is in found_, by its name in the graph
    while (std::optional<ProtoField> part = reader.next()) {
      if (part->number == kGraphNode) node(message(*part, reader), depth, scope);
      if (part->number == kGraphInitializer) {
        OnnxTensor initializer = tensor(message(*part, reader));
        if (initializer.name.empty()) reader.fail("an initializer without a name");
        initializers.emplace_back(found_.tensors.size(), initializer.name);
        uses_.stored(scope, initializer.name);
        initializer.name = scope + initializer.name;
        found_.tensors.push_back(std::move(initializer));
      }
      if (part->number == kGraphSparseInitializer) {
        OnnxSparse initializer = sparse(message(*part, reader));
        if (initializer.values.name.empty()) reader.fail("a sparse initializer without a name");
        uses_.stored(scope, initializer.values.name);
        initializer.values.name = scope + initializer.values.name;
        found_.sparse.push_back(std::move(initializer));
      }
      if (part->number == kGraphValueInfo) value_info(message(*part, reader), provenance);
      if (part->number == kGraphMetadata)
        std::apply([&](const std::string& key, const std::string& value) { provenance.add_graph(key, value); },
                   entry(message(*part, reader)));
    }
    // value_info and the graph's metadata are stored after the initializers (protobuf writes fields in order).
    for (const auto& [index, name] : initializers) found_.tensors[index].origin = provenance.origin(name);
    transposed_weights(provenance, initializers, scope);
  }

  /// The dynamo exporter's Linear weights, each folded into its transpose for the MatMul it feeds (x @ W^T): paired
  /// with the parameter it was folded from (OnnxTensor::transposed_from) where no other initializer has or claims
  /// that name.
  void transposed_weights(const OnnxProvenance& provenance,
                          const std::vector<std::pair<size_t, std::string>>& initializers, const std::string& scope) {
    std::map<std::string, std::vector<size_t>> claims;
    for (const auto& [index, name] : initializers) {
      claims[name].push_back(index);  // a weight still stored under its own name is claimed by it
      if (found_.tensors[index].dims.size() != 2 || !matmul_weights_.contains(scope + name)) continue;
      if (std::optional<std::string> weight = provenance.folded_weight(name)) claims[*weight].push_back(index);
    }
    for (const auto& [weight, indices] : claims)
      if (indices.size() == 1 && found_.tensors[indices.front()].name != scope + weight)
        found_.tensors[indices.front()].transposed_from = weight;
  }

  /// A ValueInfoProto's metadata: the exporter's records of where its value came from.
  void value_info(const ProtoField& field, OnnxProvenance& provenance) {
    ProtoReader reader(source_, field);
    std::string name;
    std::vector<std::pair<std::string, std::string>> entries;
    while (std::optional<ProtoField> part = reader.next()) {
      if (part->number == kValueInfoName) name = field_text(*part, reader);
      if (part->number == kValueInfoMetadata) entries.push_back(entry(message(*part, reader)));
    }
    for (const auto& [key, value] : entries) provenance.add(name, key, value);
  }

  /// A SparseTensorProto, named as its values tensor is.
  OnnxSparse sparse(const ProtoField& field) {
    ProtoReader reader(source_, field);
    OnnxSparse found{.message_offset = field.offset};
    bool values = false;
    while (std::optional<ProtoField> part = reader.next()) {
      if (part->number == kSparseValues) {
        found.values = tensor(message(*part, reader));
        values = true;
      }
      if (part->number == kSparseIndices) found.indices = tensor(message(*part, reader));
    }
    if (!values) reader.fail("a sparse tensor without values");
    found.dims = dims(field, reader, found.values.name, kSparseDims);
    return found;
  }

  void node(const ProtoField& field, int depth, const std::string& scope) {
    ProtoReader reader(source_, field);
    std::string_view name, op_type, domain;
    std::vector<std::string_view> inputs, outputs;
    std::vector<ProtoField> attributes;
    while (std::optional<ProtoField> part = reader.next()) {
      if (part->number == kNodeInput) inputs.push_back(field_text(*part, reader));
      if (part->number == kNodeOutput) outputs.push_back(field_text(*part, reader));
      if (part->number == kNodeName) name = field_text(*part, reader);
      if (part->number == kNodeOpType) op_type = field_text(*part, reader);
      if (part->number == kNodeDomain) domain = field_text(*part, reader);
      if (part->number == kNodeAttribute) attributes.push_back(message(*part, reader));
    }
    bool standard = domain.empty() || domain == "ai.onnx";
    bool constant = op_type == "Constant" && standard;
    if (op_type == "MatMul" && standard && inputs.size() == 2) matmul_weights_.insert(scope + std::string(inputs[1]));
    uses_.node(scope, op_type, domain, inputs, outputs);
    auto quantized = std::ranges::find(kQuantizedWeights, op_type, &QuantizedWeight::op_type);
    if (quantized != std::end(kQuantizedWeights) && (standard || domain == "com.microsoft"))
      dequantize(*quantized, inputs, attributes, scope);
    Node node{.output = outputs.empty() ? "" : std::string(outputs.front()), .constant = constant, .scope = scope};
    // A subgraph's scope names the node: by its name, else its output, else its operator.
    node.label = std::string(!name.empty() ? name : !node.output.empty() ? std::string_view(node.output) : op_type);
    for (const ProtoField& attribute : attributes) this->attribute(attribute, depth, node);
  }

  /// A node that dequantizes a weight (kQuantizedWeights): its codes, scale and zero point as the graph names them
  /// (resolved once every value is defined), and the axis its scales run along.
  void dequantize(const QuantizedWeight& op, const std::vector<std::string_view>& inputs,
                  const std::vector<ProtoField>& attributes, const std::string& scope) {
    auto input = [&](size_t i) { return i < inputs.size() ? std::string(inputs[i]) : std::string(); };
    OnnxDequantize node{.op_type = std::string(op.op_type),
                        .scope = scope,
                        .codes = input(op.codes),
                        .scale = op.scale == kNoInput ? "" : input(op.scale),
                        .zero_point = input(op.zero_point),
                        .axis = op.axis};
    if (node.codes.empty() || (op.scale != kNoInput && node.scale.empty())) return;  // onnx's checker refuses it
    for (const ProtoField& attribute : attributes) {
      ProtoReader reader(source_, attribute);
      std::string_view name;
      std::optional<int64_t> value;
      while (std::optional<ProtoField> part = reader.next()) {
        if (part->number == kAttributeName) name = field_text(*part, reader);
        if (part->number == kAttributeInt) value = static_cast<int64_t>(field_varint(*part, reader));
      }
      if (value && name == "axis" && op.op_type == "DequantizeLinear") node.axis = *value;
      if (value && name == "block_size") node.block_size = *value;
      if (value && name == "transB" && op.op_type == "QGemm") node.axis = *value != 0 ? 0 : 1;  // B is [N, K]
    }
    found_.dequantized.push_back(std::move(node));
  }

  /// What a node's attributes need of it.
  struct Node {
    std::string output;  ///< its first output
    bool constant = false;
    std::string scope;  ///< of the graph it is in
    std::string label;  ///< in its subgraphs' scope and its attributes' tensors' names
  };

  /// A node's attribute: the subgraphs it holds are walked, its tensors found. A Constant's value is named by the
  /// node's output (its own name, if any, is not what the graph calls it), another operator's tensors by the node
  /// and the attribute.
  void attribute(const ProtoField& field, int depth, const Node& node) {
    ProtoReader reader(source_, field);
    std::string_view name;
    std::vector<ProtoField> tensors, graphs, sparse;
    while (std::optional<ProtoField> part = reader.next()) {
      if (part->number == kAttributeName) name = field_text(*part, reader);
      if (part->number == kAttributeTensor || part->number == kAttributeTensors)
        tensors.push_back(message(*part, reader));
      if (part->number == kAttributeGraph || part->number == kAttributeGraphs) graphs.push_back(message(*part, reader));
      if (part->number == kAttributeSparseTensor || part->number == kAttributeSparseTensors)
        sparse.push_back(message(*part, reader));
    }
    for (size_t i = 0; i < graphs.size(); ++i) {
      std::string scope = fmt::format("{}{}/{}{}/", node.scope, node.label, name, ordinal(i, graphs.size()));
      uses_.subgraph(scope, node.scope);
      graph(graphs[i], depth + 1, scope);
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      OnnxTensor tensor = this->tensor(tensors[i]);
      tensor.name = value_name(node, name, ordinal(i, tensors.size()), tensor.name, reader);
      tensor.constant = true;
      found_.tensors.push_back(std::move(tensor));
    }
    for (size_t i = 0; i < sparse.size(); ++i) {
      OnnxSparse value = this->sparse(sparse[i]);
      value.values.name = value_name(node, name, ordinal(i, sparse.size()), value.values.name, reader);
      value.values.constant = true;
      found_.sparse.push_back(std::move(value));
    }
    if (node.constant) constant_field(field, name, node, reader);
  }

  /// Numbers the items of a list (`graphs`, `tensors`) that holds more than one.
  static std::string ordinal(size_t i, size_t count) { return count > 1 ? fmt::format(".{}", i) : ""; }

  /// The name of the tensor an attribute holds: a Constant's output (else the tensor's own name), else
  /// `<node>/<attribute><ordinal>`; in its graph's scope.
  static std::string value_name(const Node& node, std::string_view attribute, const std::string& ordinal,
                                std::string_view own, const ProtoReader& reader) {
    if (!node.constant) return fmt::format("{}{}/{}{}", node.scope, node.label, attribute, ordinal);
    std::string_view name = !node.output.empty() ? std::string_view(node.output) : own;
    if (name.empty()) reader.fail("a Constant node without an output");
    return node.scope + std::string(name);
  }

  /// A Constant's value held in the attribute's own fields (value_float, value_ints, ...): a tensor whose values
  /// load/onnx/onnx.cpp reads from that field.
  void constant_field(const ProtoField& field, std::string_view attribute, const Node& node,
                      const ProtoReader& reader) {
    auto kind = std::ranges::find(kConstantFields, attribute, &ConstantField::attribute);
    if (kind == std::end(kConstantFields)) return;
    OnnxTensor tensor{.name = value_name(node, attribute, "", "", reader),
                      .data_type = kind->data_type,
                      .message_offset = field.offset,
                      .message_size = field.size,
                      .values_field = kind->field,
                      .constant = true};
    if (!kind->scalar)
      tensor.dims = {static_cast<int64_t>(
          for_each_value(source_, field.offset, field.size, kind->field, kind->wire, [](uint64_t) {}))};
    found_.tensors.push_back(std::move(tensor));
  }

  OnnxTensor tensor(const ProtoField& field) {
    OnnxTensor found{.message_offset = field.offset, .message_size = field.size};
    ProtoReader reader(source_, field);
    std::map<std::string, std::string, std::less<>> external_data;
    bool external = false;
    while (std::optional<ProtoField> part = reader.next()) {
      if (part->number == kTensorDataType) found.data_type = static_cast<int32_t>(field_varint(*part, reader));
      if (part->number == kTensorName) found.name = field_text(*part, reader);
      if (part->number == kTensorRawData) {
        found.raw_size = message(*part, reader).size;
        found.raw_offset = part->offset;
      }
      if (part->number == kTensorExternalData) external_data.insert(entry(message(*part, reader)));
      if (part->number == kTensorDataLocation) external = field_varint(*part, reader) == kLocationExternal;
    }
    found.dims = dims(field, reader, found.name, kTensorDims);
    if (external) found.external = external_location(external_data, reader, found.name);
    return found;
  }

  /// The dimensions in field `number` of the message `field` (TensorProto.dims, SparseTensorProto.dims).
  std::vector<int64_t> dims(const ProtoField& field, const ProtoReader& reader, const std::string& name,
                            uint32_t number) {
    std::vector<int64_t> dims;
    bool negative = false;
    for_each_value(source_, field.offset, field.size, number, WireType::kVarint, [&](uint64_t extent) {
      negative = negative || extent > static_cast<uint64_t>(INT64_MAX);
      if (dims.size() <= kMaxOnnxDims) dims.push_back(static_cast<int64_t>(extent));
    });
    if (negative) reader.fail(fmt::format("tensor `{}` has a negative dimension", name));
    if (dims.size() > kMaxOnnxDims)
      reader.fail(fmt::format("tensor `{}` has more than {} dimensions", name, kMaxOnnxDims));
    return dims;
  }

  /// A StringStringEntryProto's key and value.
  std::pair<std::string, std::string> entry(const ProtoField& field) {
    ProtoReader reader(source_, field);
    std::pair<std::string, std::string> entry;
    while (std::optional<ProtoField> part = reader.next()) {
      if (part->number == kEntryKey) entry.first = field_text(*part, reader);
      if (part->number == kEntryValue) entry.second = field_text(*part, reader);
    }
    return entry;
  }

  static uint64_t number(std::string_view text, const ProtoReader& reader, std::string_view what) {
    std::optional<uint64_t> value = whole_number<uint64_t>(text);
    if (!value) reader.fail(fmt::format("{} `{}` is not a number", what, text));
    return *value;
  }

  static OnnxExternal external_location(const std::map<std::string, std::string, std::less<>>& entries,
                                        const ProtoReader& reader, const std::string& name) {
    auto location = entries.find("location");
    if (location == entries.end() || location->second.empty())
      reader.fail(fmt::format("tensor `{}`: external data without a location", name));
    OnnxExternal external{.location = location->second};
    if (auto offset = entries.find("offset"); offset != entries.end())
      external.offset = number(offset->second, reader, fmt::format("tensor `{}`: external data offset", name));
    if (auto length = entries.find("length"); length != entries.end())
      external.length = number(length->second, reader, fmt::format("tensor `{}`: external data length", name));
    return external;
  }

  const ByteSource& source_;
  OnnxGraph found_;
  std::set<std::string> matmul_weights_;  ///< the values MatMul nodes multiply by (their second input), scoped
  OnnxUses uses_;
};

}  // namespace

OnnxGraph read_onnx_graph(const ByteSource& model) { return GraphWalker(model).walk(); }

}  // namespace precdetect
