#pragma once
/// The tensors an ONNX model holds (onnx/onnx.proto), found by walking its protobuf encoding in place: the graph's
/// initializers, the tensors in its nodes' attributes, and the same in the subgraphs of its nodes (If's branches,
/// Loop's and Scan's bodies), to any depth up to kMaxOnnxGraphDepth. A Constant node's value is named by the node's
/// output, whichever attribute holds it: `value` (a tensor), `value_float(s)`, `value_int(s)` (read from the
/// attribute's own fields, as FLOAT and INT64 tensors), `value_string(s)` (STRING: not read) or `sparse_value` (a
/// sparse tensor, as the sparse initializers are). Another operator's tensor attributes (ConstantOfShape's `value`, a
/// `tensors` list) are named `<node>/<attribute>`, numbered `.<i>` in a list. A subgraph's tensors are named by
/// their scope, `<node>/<attribute>/<name>` (the node by its name, else its first output, else its operator),
/// since sibling subgraphs (an If's two branches) may each define a name once. Only the fields that hold or name
/// tensors are read: ModelProto.graph (7); GraphProto.node (1), .initializer (5), .sparse_initializer (15);
/// .value_info (13), .metadata_props (16) (onnx_provenance.h); ValueInfoProto.name (1), .metadata_props (4);
/// NodeProto.input (1), .output (2), .name (3), .op_type (4), .attribute (5), .domain (7); AttributeProto.name (1), .t
/// (5), .g (6), .tensors (10), .graphs (11), .sparse_tensor (22), .sparse_tensors (23), and a Constant's .f (2), .i
/// (3), .s (4), .floats (7), .ints (8), .strings (9); TensorProto.dims (1), .data_type (2), .name (8), .raw_data (9),
/// .external_data (13), .data_location (14), and its typed fields when its values are read (load/onnx/onnx.cpp);
/// SparseTensorProto.values (1), .indices (2), .dims (3).
/// The model's functions (ModelProto.functions) are templates, not tensors, and are not read.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "precdetect/load/onnx/onnx_provenance.h"
#include "precdetect/load/onnx/onnx_uses.h"
#include "precdetect/load/source/byte_source.h"

namespace precdetect {

/// Graphs nested deeper than this (a subgraph of a subgraph ...) are refused: no exporter nests more than a few.
constexpr int kMaxOnnxGraphDepth = 32;
/// The longest scope a subgraph's tensor names may have: every tensor of a subgraph carries its scope, so a long
/// node name would otherwise be copied once per tensor (real scopes are a few dozen bytes).
constexpr size_t kMaxOnnxScope = 4096;
/// The most dimensions a tensor may have.
constexpr size_t kMaxOnnxDims = 64;

/// Where an external tensor's bytes are: TensorProto.external_data's `location`, `offset` and `length`.
struct OnnxExternal {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;  ///< nullopt: to the end of the file
};

struct OnnxTensor {
  std::string name;
  int32_t data_type = 0;  ///< TensorProto.DataType
  std::vector<int64_t> dims;
  uint64_t message_offset = 0;       ///< where the TensorProto's encoding starts in the file: its typed fields hold the
  uint64_t message_size = 0;         ///< values; and its length
  std::optional<uint64_t> raw_size;  ///< raw_data's length, when the tensor has one
  uint64_t raw_offset = 0;           ///< where raw_data starts in the file
  std::optional<OnnxExternal> external;  ///< data_location EXTERNAL
  /// The field of `message` that holds the values when `message` is a Constant's AttributeProto (value_float 2,
  /// value_floats 7, value_int 3, value_ints 8); 0: a TensorProto, whose data type names its typed field.
  uint32_t values_field = 0;
  bool constant = false;  ///< a node attribute's value (the exporter's), not an initializer
  /// How the graph uses the value (onnx_uses.h): taken as a weight by an operator, read otherwise, or never read.
  /// An initializer or a Constant's value alike: exporters that keep every weight in a Constant node (Paddle2ONNX,
  /// spox) store weights there, and others store masks and shapes as initializers.
  OnnxUse use = OnnxUse::kUnread;
  OnnxOrigin origin = OnnxOrigin::kUnknown;  ///< an initializer's, by its graph's value_info and metadata
  /// The parameter whose transpose this initializer is: the dynamo exporter folded a Linear's weight for the MatMul
  /// it feeds, and recorded which (OnnxProvenance::folded_weight); nullopt for any other.
  std::optional<std::string> transposed_from;
};

/// A SparseTensorProto: a tensor of shape `dims` that is zero but at `indices`, where it holds `values`.
struct OnnxSparse {
  /// The stored values, [NNZ], named as the sparse tensor is (onnx names a sparse initializer by its values'
  /// name; a Constant's sparse_value by the node's output), its `constant` and `origin` the sparse tensor's.
  OnnxTensor values;
  /// INT64 indices: [NNZ] positions in the row-major dense tensor, or [NNZ, rank] coordinates; nullopt when
  /// the message has none (valid only for NNZ 0). Checked against `dims` when read (load/onnx/onnx_sparse.h).
  std::optional<OnnxTensor> indices;
  std::vector<int64_t> dims;    ///< the dense shape
  uint64_t message_offset = 0;  ///< where the SparseTensorProto starts in the file
};

/// A node that dequantizes a weight it reads: a DequantizeLinear (QDQ models: onnxruntime's quantizer writes each
/// quantized weight as its integer codes read by one), or a QOperator model's QLinearConv, QLinearMatMul, QGemm,
/// DynamicQuantizeMatMul, MatMulInteger or ConvInteger. The scoped values it reads, as the graph resolves them
/// (OnnxUses::resolve), and its attributes.
struct OnnxDequantize {
  std::string op_type;
  std::string scope;                     ///< of the graph it is in
  std::string codes, scale, zero_point;  ///< the weight's codes, scale and zero point (empty: absent; a scale is
                                         ///< absent from MatMulInteger and ConvInteger, which take none)
  int64_t axis = 1;                      ///< as stored: may be negative (counted from the last dimension)
  int64_t block_size = 0;                ///< opset 21's blocks along `axis`; 0: per tensor or per axis
};

struct OnnxGraph {
  std::vector<OnnxTensor> tensors;  ///< in the order they are stored
  std::vector<OnnxSparse> sparse;   ///< the sparse initializers and sparse attributes, in the order they are stored
  std::vector<OnnxDequantize> dequantized;  ///< every DequantizeLinear node, in the order they are stored
};

/// The tensors of the ModelProto `model`, read by its fields' places (a raw_data is stepped over, not viewed).
/// Throws Error(kInvalidOnnx) naming the path and the
/// offset for damaged protobuf (a truncated field, a length past its message, a varint over 10 bytes, a field of
/// the wrong wire type), a graph nested over kMaxOnnxGraphDepth or with a scope over kMaxOnnxScope, an initializer
/// (sparse or not) without a name, a sparse tensor without values, a Constant node without an output, a negative
/// dimension or more than kMaxOnnxDims, external data without a location or with an offset or length that is no number.
OnnxGraph read_onnx_graph(const ByteSource& model);

}  // namespace precdetect
