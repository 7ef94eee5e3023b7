#include "precdetect/load/onnx/onnx_graph.h"

#include <fmt/format.h>

#include <charconv>
#include <map>

#include "precdetect/load/onnx/protobuf.h"

namespace precdetect {
namespace {

// Field numbers of onnx/onnx.proto (onnx 1.23), message by message.
constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kGraphNode = 1, kGraphInitializer = 5, kGraphSparseInitializer = 15;
constexpr uint32_t kNodeOutput = 2, kNodeName = 3, kNodeOpType = 4, kNodeAttribute = 5, kNodeDomain = 7;
constexpr uint32_t kAttributeName = 1, kAttributeTensor = 5, kAttributeGraph = 6, kAttributeGraphs = 11;
constexpr uint32_t kTensorDims = 1, kTensorDataType = 2, kTensorName = 8, kTensorRawData = 9, kTensorExternalData = 13,
                   kTensorDataLocation = 14;
constexpr uint32_t kEntryKey = 1, kEntryValue = 2;
constexpr uint32_t kSparseValues = 1;
constexpr uint64_t kLocationExternal = 1;  // TensorProto.DataLocation.EXTERNAL

/// A message-valued field's bytes; throws when the field is not length-delimited.
const ProtoField& message(const ProtoField& field, const ProtoReader& reader) {
  if (field.wire != WireType::kBytes) reader.fail(fmt::format("field {} is not a message", field.number));
  return field;
}

class GraphWalker {
 public:
  explicit GraphWalker(const std::filesystem::path& path) : path_(path) {}

  OnnxGraph walk(std::span<const std::byte> model) {
    ProtoReader reader(model, path_, 0);
    while (std::optional<ProtoField> field = reader.next())
      if (field->number == kModelGraph) graph(message(*field, reader), 0, "");
    return std::move(found_);
  }

 private:
  /// A graph whose tensors are named `scope` + their name: "" for the model's graph, "<node>/<attribute>/" for a
  /// subgraph, since sibling subgraphs (an If's two branches) may each define one name.
  void graph(const ProtoField& field, int depth, const std::string& scope) {
    ProtoReader reader(field.payload, path_, field.offset);
    if (depth > kMaxOnnxGraphDepth) reader.fail(fmt::format("graphs nested more than {} deep", kMaxOnnxGraphDepth));
    if (scope.size() > kMaxOnnxScope)
      reader.fail(fmt::format("a subgraph whose scope (its nodes' names) is over {} bytes", kMaxOnnxScope));
    while (std::optional<ProtoField> part = reader.next()) {
      if (part->number == kGraphNode) node(message(*part, reader), depth, scope);
      if (part->number == kGraphInitializer) {
        OnnxTensor initializer = tensor(message(*part, reader));
        if (initializer.name.empty()) reader.fail("an initializer without a name");
        initializer.name = scope + initializer.name;
        found_.tensors.push_back(std::move(initializer));
      }
      if (part->number == kGraphSparseInitializer) sparse(message(*part, reader), scope);
    }
  }

  /// A sparse initializer is named by its values tensor; its values are not read.
  void sparse(const ProtoField& field, const std::string& scope) {
    ProtoReader reader(field.payload, path_, field.offset);
    std::string name;
    while (std::optional<ProtoField> part = reader.next())
      if (part->number == kSparseValues) name = tensor(message(*part, reader)).name;
    found_.sparse.push_back(scope + (name.empty() ? "(unnamed)" : name));
  }

  void node(const ProtoField& field, int depth, const std::string& scope) {
    ProtoReader reader(field.payload, path_, field.offset);
    std::optional<std::string> output;
    std::string_view name, op_type, domain;
    std::vector<ProtoField> attributes;
    while (std::optional<ProtoField> part = reader.next()) {
      if (part->number == kNodeOutput && !output) output = field_text(*part, reader);
      if (part->number == kNodeName) name = field_text(*part, reader);
      if (part->number == kNodeOpType) op_type = field_text(*part, reader);
      if (part->number == kNodeDomain) domain = field_text(*part, reader);
      if (part->number == kNodeAttribute) attributes.push_back(message(*part, reader));
    }
    bool constant = op_type == "Constant" && (domain.empty() || domain == "ai.onnx");
    Node node{.output = output.value_or(""), .constant = constant, .scope = scope};
    // A subgraph's scope names the node: by its name, else its output, else its operator.
    node.label = std::string(!name.empty() ? name : !node.output.empty() ? std::string_view(node.output) : op_type);
    for (const ProtoField& attribute : attributes) this->attribute(attribute, depth, node);
  }

  /// What a node's attributes need of it.
  struct Node {
    std::string output;  ///< its first output
    bool constant = false;
    std::string scope;  ///< of the graph it is in
    std::string label;  ///< of the scope of its subgraphs
  };

  /// A node's attribute: the subgraphs it holds are walked; a Constant node's `value` is a tensor named by the
  /// node's output (its own name, if any, is not what the graph calls it).
  void attribute(const ProtoField& field, int depth, const Node& node) {
    ProtoReader reader(field.payload, path_, field.offset);
    std::string_view name;
    std::optional<ProtoField> value;
    std::vector<ProtoField> graphs;
    while (std::optional<ProtoField> part = reader.next()) {
      if (part->number == kAttributeName) name = field_text(*part, reader);
      if (part->number == kAttributeTensor) value = message(*part, reader);
      if (part->number == kAttributeGraph || part->number == kAttributeGraphs) graphs.push_back(message(*part, reader));
    }
    for (size_t i = 0; i < graphs.size(); ++i)  // a list of graphs (`graphs`) numbers them
      graph(graphs[i], depth + 1,
            fmt::format("{}{}/{}{}/", node.scope, node.label, name, graphs.size() > 1 ? fmt::format(".{}", i) : ""));
    if (!node.constant || name != "value" || !value) return;
    OnnxTensor tensor = this->tensor(*value);
    if (!node.output.empty()) tensor.name = node.output;
    if (tensor.name.empty()) reader.fail("a Constant node without an output");
    tensor.name = node.scope + tensor.name;
    tensor.constant = true;
    found_.tensors.push_back(std::move(tensor));
  }

  OnnxTensor tensor(const ProtoField& field) {
    OnnxTensor found{.message = field.payload, .message_offset = field.offset};
    ProtoReader reader(field.payload, path_, field.offset);
    std::map<std::string, std::string, std::less<>> external_data;
    bool external = false;
    while (std::optional<ProtoField> part = reader.next()) {
      if (part->number == kTensorDataType) found.data_type = static_cast<int32_t>(field_varint(*part, reader));
      if (part->number == kTensorName) found.name = field_text(*part, reader);
      if (part->number == kTensorRawData) {
        found.raw = message(*part, reader).payload;
        found.raw_offset = part->offset;
      }
      if (part->number == kTensorExternalData) external_data.insert(entry(message(*part, reader)));
      if (part->number == kTensorDataLocation) external = field_varint(*part, reader) == kLocationExternal;
    }
    found.dims = dims(field, reader, found.name);
    if (external) found.external = external_location(external_data, reader, found.name);
    return found;
  }

  std::vector<int64_t> dims(const ProtoField& field, const ProtoReader& reader, const std::string& name) {
    std::vector<int64_t> dims;
    bool negative = false;
    for_each_value(field.payload, path_, field.offset, kTensorDims, WireType::kVarint, [&](uint64_t extent) {
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
    ProtoReader reader(field.payload, path_, field.offset);
    std::pair<std::string, std::string> entry;
    while (std::optional<ProtoField> part = reader.next()) {
      if (part->number == kEntryKey) entry.first = field_text(*part, reader);
      if (part->number == kEntryValue) entry.second = field_text(*part, reader);
    }
    return entry;
  }

  static uint64_t number(std::string_view text, const ProtoReader& reader, std::string_view what) {
    uint64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size())
      reader.fail(fmt::format("{} `{}` is not a number", what, text));
    return value;
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

  const std::filesystem::path& path_;
  OnnxGraph found_;
};

}  // namespace

OnnxGraph read_onnx_graph(std::span<const std::byte> model, const std::filesystem::path& path) {
  return GraphWalker(path).walk(model);
}

}  // namespace precdetect
