// The ONNX reader on protobuf bytes built here (field by field, as onnx.proto numbers them): the wire reader, every
// way a tensor's values may be stored (raw_data, packed and unpacked typed fields, int32_data's bit patterns,
// external files), Constant nodes and subgraphs, and the named errors. Files written by onnx and torch.onnx.export
// themselves are tested end to end (tests/e2e/test_onnx.py).
#include "precdetect/load/onnx/onnx.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>

#include "precdetect/core/error.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/file_format.h"
#include "precdetect/load/onnx/protobuf.h"
#include "test_util.h"

namespace precdetect {
namespace {

using testing::raw_bytes;

std::string varint(uint64_t value) {
  std::string out;
  for (; value >= 0x80; value >>= 7) out += static_cast<char>((value & 0x7F) | 0x80);
  return out + static_cast<char>(value);
}
std::string tag(uint32_t number, int wire) { return varint((uint64_t{number} << 3) | wire); }
std::string bytes_field(uint32_t number, const std::string& payload) {
  return tag(number, 2) + varint(payload.size()) + payload;
}
std::string varint_field(uint32_t number, uint64_t value) { return tag(number, 0) + varint(value); }
std::string fixed32_field(uint32_t number, float value) {
  return tag(number, 5) + raw_bytes(std::vector<uint32_t>{std::bit_cast<uint32_t>(value)});
}

/// A TensorProto: dims packed, then `data` (its value fields, encoded by the caller).
std::string tensor(const std::string& name, int data_type, const std::vector<uint64_t>& dims, const std::string& data) {
  std::string packed_dims;
  for (uint64_t extent : dims) packed_dims += varint(extent);
  return bytes_field(1, packed_dims) + varint_field(2, data_type) + bytes_field(8, name) + data;
}
std::string constant_node(const std::string& output, const std::string& value) {
  std::string attribute = bytes_field(1, "value") + bytes_field(5, value) + varint_field(20, 4);
  return bytes_field(2, output) + bytes_field(4, "Constant") + bytes_field(5, attribute);
}
std::string model(const std::string& graph) { return varint_field(1, 8) + bytes_field(7, graph); }

ErrorCode code_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::kInternal;
}

Checkpoint read(std::unique_ptr<ByteSource> file) {
  Checkpoint checkpoint;
  checkpoint.files.push_back(std::move(file));
  EXPECT_EQ(read_onnx(checkpoint, 0), FileFormat::kOnnx);
  return checkpoint;
}
Checkpoint read(const std::string& bytes) { return read(memory_source(bytes, "/nowhere/model.onnx")); }

std::string values_of(const Checkpoint& checkpoint, const TensorRecord& record) {
  auto bytes = checkpoint.files[record.file]->view(record.offset, record.nbytes);
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

TEST(OnnxProtobuf, ReadsEachWireTypeAndRefusesDamageByName) {
  std::string message = varint_field(1, 300) + bytes_field(2, "ab") + fixed32_field(3, 1.5f) + tag(4, 1) +
                        raw_bytes(std::vector<uint64_t>{7});
  // At offset 100 of its file, whose first 100 bytes a field's offset counts.
  std::unique_ptr<ByteSource> file = memory_source(std::string(100, '\0') + message, "m.onnx");
  ProtoReader reader(*file, 100, message.size());
  EXPECT_EQ(reader.next()->value, 300u);
  ProtoField text = *reader.next();
  EXPECT_EQ(field_text(text, reader), "ab");
  EXPECT_EQ(text.offset, 100u + 5);  // the payload, in the file: after 3 bytes of field 1, a tag and a length
  EXPECT_EQ(std::bit_cast<float>(static_cast<uint32_t>(reader.next()->value)), 1.5f);
  EXPECT_EQ(reader.next()->value, 7u);
  EXPECT_FALSE(reader.next());
  for (const std::string& bad : {bytes_field(2, "abc").substr(0, 4), tag(1, 0) + std::string(11, '\xff'), tag(5, 3),
                                 varint_field(0, 1), tag(1, 5) + "ab"}) {
    std::unique_ptr<ByteSource> damaged_file = memory_source(bad, "m.onnx");
    ProtoReader damaged(*damaged_file, 0, bad.size());
    EXPECT_EQ(code_of([&] { damaged.next(); }), ErrorCode::kInvalidOnnx) << bad.size();
  }
}

TEST(Onnx, TheWalkStepsOverRawDataWithoutViewingIt) {
  // A remote model's raw_data is not fetched to find the fields around it: the walk views a field's payload only
  // when it reads it, through windows of 64 bytes here.
  std::string big(1 << 20, '\x01'), small = raw_bytes(std::vector<float>{1.0f, 2.0f});
  std::string bytes = model(bytes_field(5, tensor("big", 1, {1 << 18}, bytes_field(9, big))) +
                            bytes_field(5, tensor("small", 1, {2}, bytes_field(9, small))));
  auto source = std::make_unique<testing::PiecewiseSource>(bytes, 64);
  const testing::PiecewiseSource& piecewise = *source;
  Checkpoint checkpoint = read(std::move(source));
  ASSERT_EQ(checkpoint.tensors.size(), 2u);
  uint64_t at = bytes.find(big);
  EXPECT_EQ(checkpoint.tensors[0].offset, at);
  EXPECT_EQ(checkpoint.tensors[0].nbytes, big.size());
  EXPECT_FALSE(piecewise.viewed(at + 64, big.size() - 128));
  EXPECT_EQ(values_of(checkpoint, checkpoint.tensors[1]), small);
}

TEST(Onnx, ReadsRawPackedUnpackedAndBitPatternValues) {
  std::vector<float> raw = {1.0f, -2.5f, 3e38f};
  std::string unpacked = fixed32_field(4, 0.25f) + fixed32_field(4, -8.0f);
  std::string halves = bytes_field(5, varint(0x3C00) + varint(0xC000));  // fp16 1.0 and -2.0 in int32_data
  std::string graph =
      bytes_field(5, tensor("raw", 1, {3}, bytes_field(9, raw_bytes(raw)))) +
      bytes_field(5, tensor("unpacked", 1, {2, 1}, unpacked)) + bytes_field(5, tensor("half", 10, {2}, halves)) +
      bytes_field(5, tensor("ints", 7, {2}, varint_field(7, 5) + varint_field(7, uint64_t(-3)))) +
      bytes_field(1, constant_node("mask", tensor("", 1, {}, bytes_field(4, raw_bytes(raw).substr(8)))));
  std::string bytes = model(graph);
  Checkpoint checkpoint = read(bytes);
  ASSERT_EQ(checkpoint.tensors.size(), 5u);
  const TensorRecord& first = checkpoint.tensors[0];
  EXPECT_EQ(first.dtype, DType::F32);
  EXPECT_EQ(first.offset, bytes.find(raw_bytes(raw)));  // in place
  EXPECT_EQ(values_of(checkpoint, first), raw_bytes(raw));
  EXPECT_EQ(checkpoint.tensors[1].shape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values_of(checkpoint, checkpoint.tensors[1]), raw_bytes(std::vector<float>{0.25f, -8.0f}));
  EXPECT_EQ(checkpoint.tensors[2].dtype, DType::F16);
  EXPECT_EQ(values_of(checkpoint, checkpoint.tensors[2]), raw_bytes(std::vector<uint16_t>{0x3C00, 0xC000}));
  EXPECT_EQ(values_of(checkpoint, checkpoint.tensors[3]), raw_bytes(std::vector<int64_t>{5, -3}));
  const TensorRecord& mask = checkpoint.tensors[4];
  EXPECT_EQ(mask.name, "mask");  // the node's output, not its value's own (empty) name
  EXPECT_TRUE(mask.shape.empty());
  EXPECT_EQ(mask.numel, 1u);
  EXPECT_EQ(values_of(checkpoint, mask), raw_bytes(std::vector<float>{3e38f}));
  EXPECT_EQ(mask.role, TensorRole::kBuffer);
  EXPECT_TRUE(mask.computed_from_config);
  EXPECT_EQ(checkpoint.tensors[0].role, TensorRole::kModel);
}

TEST(Onnx, WalksSubgraphsAndListsWhatItDoesNotRead) {
  // Both branches define `w` and `c`: sibling scopes, told apart by the node (its output `y`) and the attribute.
  std::string body = bytes_field(5, tensor("w", 11, {1}, bytes_field(10, raw_bytes(std::vector<double>{2.0})))) +
                     bytes_field(1, constant_node("c", tensor("", 1, {1}, fixed32_field(4, 1))));
  std::string if_node = bytes_field(2, "y") + bytes_field(4, "If") +
                        bytes_field(5, bytes_field(1, "then_branch") + bytes_field(6, body)) +
                        bytes_field(5, bytes_field(1, "else_branch") + bytes_field(6, body));
  std::string sparse = bytes_field(1, tensor("s", 1, {1}, fixed32_field(4, 2.5f))) +
                       bytes_field(2, tensor("", 7, {1}, varint_field(7, 3))) + bytes_field(3, varint(4));
  std::string graph = bytes_field(1, if_node) + bytes_field(5, tensor("names", 8, {1}, bytes_field(6, "x"))) +
                      bytes_field(15, sparse) +
                      bytes_field(5, tensor("nibbles", 22, {2}, bytes_field(9, std::string(1, '\x12'))));
  Checkpoint checkpoint = read(model(graph));
  std::vector<std::string> names;
  for (const TensorRecord& record : checkpoint.tensors) names.push_back(record.name);
  EXPECT_EQ(names, (std::vector<std::string>{"y/then_branch/w", "y/then_branch/c", "y/else_branch/w", "y/else_branch/c",
                                             "s"}));
  EXPECT_EQ(values_of(checkpoint, checkpoint.tensors[2]), raw_bytes(std::vector<double>{2.0}));
  ASSERT_TRUE(checkpoint.tensors[4].sparse_of);  // its one value, standing for a tensor of 4
  EXPECT_EQ(checkpoint.tensors[4].sparse_of->shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(checkpoint.tensors[4].sparse_of->numel, 4u);
  EXPECT_EQ(values_of(checkpoint, checkpoint.tensors[4]), raw_bytes(std::vector<float>{2.5f}));
  ASSERT_EQ(checkpoint.warnings.size(), 1u);
  EXPECT_EQ(checkpoint.warnings[0].code, WarningCode::kDtypesNotRead);
  EXPECT_EQ(checkpoint.warnings[0].names, (std::vector<std::string>{"names (STRING)", "nibbles (INT4)"}));
}

/// A SparseTensorProto `name` of `values` (FLOAT) and INT64 `indices` (int64_data) of shape `index_dims`, dense
/// `dims`.
std::string sparse_tensor(const std::string& name, const std::vector<float>& values,
                          const std::vector<uint64_t>& index_dims, const std::vector<int64_t>& indices,
                          const std::vector<uint64_t>& dims, int index_type = 7) {
  std::string value_fields, index_fields, packed_dims;
  for (float value : values) value_fields += fixed32_field(4, value);
  for (int64_t index : indices) index_fields += varint_field(7, static_cast<uint64_t>(index));
  for (uint64_t extent : dims) packed_dims += varint(extent);
  return bytes_field(1, tensor(name, 1, {values.size()}, value_fields)) +
         bytes_field(2, tensor("", index_type, index_dims, index_fields)) + bytes_field(3, packed_dims);
}
/// A model of one sparse initializer `s`, as sparse_tensor.
std::string sparse_model(const std::vector<float>& values, const std::vector<uint64_t>& index_dims,
                         const std::vector<int64_t>& indices, const std::vector<uint64_t>& dims, int index_type = 7) {
  return model(bytes_field(15, sparse_tensor("s", values, index_dims, indices, dims, index_type)));
}

TEST(Onnx, ReadsSparseTensorsByPositionsAndCoordinates) {
  for (const std::string& bytes :
       {sparse_model({1.5f, -2.0f}, {2}, {1, 5}, {2, 3}), sparse_model({1.5f, -2.0f}, {2, 2}, {0, 1, 1, 2}, {2, 3}),
        sparse_model({}, {0}, {}, {2, 3})}) {
    Checkpoint checkpoint = read(bytes);
    ASSERT_EQ(checkpoint.tensors.size(), 1u);
    const TensorRecord& record = checkpoint.tensors[0];
    EXPECT_EQ(record.name, "s");
    ASSERT_TRUE(record.sparse_of);
    EXPECT_EQ(record.sparse_of->shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(record.sparse_of->numel, 6u);
  }
}

TEST(Onnx, RefusesSparseTensorsOnnxsCheckerRefuses) {
  // Two tensors of 2^60 elements each: a model's parameter count would wrap at 2^64 x 4 bytes.
  std::string huge = sparse_tensor("s", {1}, {1}, {0}, {1ULL << 30, 1ULL << 30});
  std::string two_huge = model(bytes_field(15, huge) + bytes_field(15, huge));
  for (const auto& [bad, needle] : std::vector<std::pair<std::string, std::string>>{
           {sparse_model({1, 2}, {2}, {1, 6}, {2, 3}), "outside [0, 6)"},                    // out of range
           {sparse_model({1, 2}, {2}, {-1, 2}, {2, 3}), "outside [0, 6)"},                   // negative
           {sparse_model({1, 2}, {2, 2}, {0, 3, 1, 0}, {2, 3}), "outside [0, 3)"},           // a coordinate
           {sparse_model({1, 2}, {2}, {3, 3}, {2, 3}), "strictly increasing"},               // a duplicate
           {sparse_model({1, 2}, {2}, {4, 1}, {2, 3}), "strictly increasing"},               // unsorted
           {sparse_model({1, 2}, {2, 2}, {1, 0, 0, 2}, {2, 3}), "strictly increasing"},      // coordinates unsorted
           {sparse_model({1, 2}, {3}, {0, 1, 2}, {2, 3}), "3 sparse indices for 2 values"},  // counts differ
           {sparse_model({1, 2}, {2, 3}, {0, 0, 0, 0, 0, 1}, {2, 3}),
            "3 dimensions for a tensor of rank 2"},                                              // coordinates' rank
           {sparse_model({1, 2}, {2, 1, 1}, {0, 1}, {2, 3}), "rank 3"},                          // indices' rank
           {sparse_model({1, 2}, {2}, {0, 1}, {2, 3}, 6), "must be INT64"},                      // INT32 indices
           {sparse_model({1, 2}, {2}, {0, 1}, {1ULL << 62, 1ULL << 62}), "overflows"},           // dims overflow
           {sparse_model({1, 2}, {2}, {0, 1}, {1ULL << 31, 1ULL << 30}), "over 2^60 elements"},  // too many
           {two_huge, "over 2^60 elements"},
           {sparse_model({1, 2}, {2}, {0, 1}, {}), "rank 0"},                // no dims
           {sparse_model({1, 2}, {2}, {0, 1}, {0, 3}), "must be positive"},  // a zero dimension
           {sparse_model({1, 2}, {2}, {0}, {2, 3}), "1 values in field 7"},  // fewer indices stored
       }) {
    try {
      read(bad);
      ADD_FAILURE() << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidOnnx) << needle;
      EXPECT_NE(std::string(e.what()).find("tensor `s"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
}

TEST(Onnx, RefusesValuesThatAreNotTheShapesAndDamagedGraphs) {
  auto graph_with = [](const std::string& initializer) { return model(bytes_field(5, initializer)); };
  std::string two_floats = raw_bytes(std::vector<float>{1, 2});
  std::string nested = bytes_field(5, tensor("w", 1, {1}, fixed32_field(4, 1)));
  std::string body = bytes_field(1, "body") + bytes_field(6, nested);  // an attribute holding a graph
  for (int depth = 0; depth < 40; ++depth)
    nested = bytes_field(1, bytes_field(5, bytes_field(1, "body") + bytes_field(6, nested)));
  for (const std::string& bad : {
           graph_with(tensor("w", 1, {3}, bytes_field(9, two_floats))),  // raw_data too short
           graph_with(tensor("w", 1, {3}, bytes_field(4, two_floats))),  // two values for three
           graph_with(tensor("w", 99, {1}, "")),                         // unknown type
           graph_with(tensor("", 1, {1}, fixed32_field(4, 1))),          // unnamed initializer
           graph_with(tensor("w", 1, {uint64_t(-1)}, "")),               // negative dimension
           graph_with(tensor("w", 1, {1ULL << 62, 1ULL << 62}, "")),     // overflowing count
           model(nested),                                                // nested over 32 deep
           model(bytes_field(1, bytes_field(3, std::string(5000, 'n')) + bytes_field(5, body))),  // a long scope
           model(bytes_field(5, tensor("w", 1, {1}, bytes_field(9, "abcd"))).substr(0, 12)),      // truncated
       })
    EXPECT_EQ(code_of([&] { read(bad); }), ErrorCode::kInvalidOnnx) << bad.size();
}

std::string node(const std::string& op_type, const std::string& output, const std::string& attributes) {
  return bytes_field(1, bytes_field(2, output) + bytes_field(4, op_type) + attributes);
}
std::string attribute(const std::string& name, const std::string& value) {
  return bytes_field(5, bytes_field(1, name) + value);
}

TEST(Onnx, ReadsTheTensorsInNodesAttributes) {
  // value_floats unpacked (as proto2 writes them) and packed; value_ints' negative value is a 10-byte varint.
  std::string floats =
      fixed32_field(7, 1.5f) + fixed32_field(7, -2.0f) + bytes_field(7, raw_bytes(std::vector<float>{4.0f}));
  std::string sparse = bytes_field(1, tensor("v", 1, {1}, fixed32_field(4, 2))) +
                       bytes_field(2, tensor("", 7, {1}, varint_field(7, 0))) + bytes_field(3, varint(3));
  std::string graph = node("Constant", "low", attribute("value_float", fixed32_field(2, -3.4e38f))) +
                      node("Constant", "scales", attribute("value_floats", floats)) +
                      node("Constant", "axis", attribute("value_int", varint_field(3, uint64_t(-1)))) +
                      node("Constant", "shape", attribute("value_ints", varint_field(8, 2) + varint_field(8, 3))) +
                      node("Constant", "label", attribute("value_strings", bytes_field(9, "a") + bytes_field(9, "b"))) +
                      node("Constant", "sparse", attribute("sparse_value", bytes_field(22, sparse))) +
                      node("ConstantOfShape", "filled",
                           attribute("value", bytes_field(5, tensor("", 1, {1}, fixed32_field(4, 0.5f))))) +
                      node("Pad", "padded",
                           attribute("pads", bytes_field(10, tensor("", 1, {1}, fixed32_field(4, 1))) +
                                                 bytes_field(10, tensor("", 1, {1}, fixed32_field(4, 2)))));
  Checkpoint checkpoint = read(model(graph));
  std::vector<std::string> names;
  for (const TensorRecord& record : checkpoint.tensors) {
    names.push_back(record.name);
    EXPECT_EQ(record.role, TensorRole::kBuffer) << record.name;  // the exporter's, every one
    EXPECT_TRUE(record.computed_from_config) << record.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"low", "scales", "axis", "shape", "filled/value", "padded/pads.0",
                                             "padded/pads.1", "sparse"}));
  EXPECT_TRUE(checkpoint.tensors[0].shape.empty());
  EXPECT_EQ(values_of(checkpoint, checkpoint.tensors[0]), raw_bytes(std::vector<float>{-3.4e38f}));
  EXPECT_EQ(checkpoint.tensors[1].shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(values_of(checkpoint, checkpoint.tensors[1]), raw_bytes(std::vector<float>{1.5f, -2.0f, 4.0f}));
  EXPECT_EQ(checkpoint.tensors[2].dtype, DType::I64);
  EXPECT_EQ(values_of(checkpoint, checkpoint.tensors[2]), raw_bytes(std::vector<int64_t>{-1}));
  EXPECT_EQ(values_of(checkpoint, checkpoint.tensors[3]), raw_bytes(std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values_of(checkpoint, checkpoint.tensors[6]), raw_bytes(std::vector<float>{2.0f}));
  ASSERT_EQ(checkpoint.warnings.size(), 1u);
  EXPECT_EQ(checkpoint.warnings[0].names, (std::vector<std::string>{"label (STRING)"}));
  for (const std::string& bad :
       {node("Constant", "c", attribute("value_float", fixed32_field(2, 1) + fixed32_field(2, 2))),
        node("Constant", "c", attribute("value_floats", varint_field(7, 1))),
        node("Constant", "", attribute("value_float", fixed32_field(2, 1)))})
    EXPECT_EQ(code_of([&] { read(model(bad)); }), ErrorCode::kInvalidOnnx) << bad.size();
}

/// A GraphProto.value_info (13) naming `name`, with one metadata entry.
std::string value_info(const std::string& name, const std::string& key, const std::string& value) {
  return bytes_field(13, bytes_field(1, name) + bytes_field(4, bytes_field(1, key) + bytes_field(2, value)));
}

TEST(Onnx, GivesTheDynamoExportersInitializersTheRoleItsRecordsSay) {
  auto weight = [](const std::string& name) { return bytes_field(5, tensor(name, 1, {1}, fixed32_field(4, 1))); };
  std::string records = value_info("fc.bias", "pkg.torch.export.graph_signature.InputSpec.kind", "PARAMETER") +
                        value_info("stats", "pkg.torch.export.graph_signature.InputSpec.kind", "BUFFER") +
                        value_info("val_0", "pkg.onnxscript.optimizer.folded_from", "['fc.weight']") +
                        value_info("val_9", "pkg.onnxscript.optimizer.folded_from", "['val_3', 'ones']");
  std::string signature = bytes_field(16, bytes_field(1, "pkg.torch.export.ExportedProgram.graph_signature") +
                                              bytes_field(2,
                                                          "\n# inputs\np_fc_weight: PARAMETER target='fc.weight'\n"
                                                          "b_stats: BUFFER target='stats' persistent=True\n"));
  std::string initializers = weight("fc.bias") + weight("stats") + weight("val_0") + weight("val_9") + weight("val_98");
  auto roles = [](const Checkpoint& checkpoint) {
    std::vector<std::pair<TensorRole, bool>> found;
    for (const TensorRecord& record : checkpoint.tensors) found.emplace_back(record.role, record.computed_from_config);
    return found;
  };
  using Roles = std::vector<std::pair<TensorRole, bool>>;
  EXPECT_EQ(roles(read(model(initializers + records + signature))), (Roles{{TensorRole::kModel, false},
                                                                           {TensorRole::kBuffer, false},
                                                                           {TensorRole::kModel, false},
                                                                           {TensorRole::kBuffer, true},
                                                                           {TensorRole::kBuffer, true}}));
  // Without the parameters' records (a tool rewrote value_info), an initializer without one is not known to be the
  // exporter's.
  std::string folds = value_info("val_0", "pkg.onnxscript.optimizer.folded_from", "['fc.weight']");
  EXPECT_EQ(roles(read(model(initializers + folds + signature))), (Roles{{TensorRole::kModel, false},
                                                                         {TensorRole::kModel, false},
                                                                         {TensorRole::kModel, false},
                                                                         {TensorRole::kModel, false},
                                                                         {TensorRole::kModel, false}}));
  // Without the exported program's signature, what a fold came from is unknown: a weight, as any initializer is.
  EXPECT_EQ(roles(read(model(initializers + records))), (Roles{{TensorRole::kModel, false},
                                                               {TensorRole::kBuffer, false},
                                                               {TensorRole::kModel, false},
                                                               {TensorRole::kModel, false},
                                                               {TensorRole::kModel, false}}));
}

TEST(Onnx, PairsAWeightFoldedIntoItsTransposeForAMatMulWithItsParameter) {
  auto matmul = [](const std::string& b) {
    return bytes_field(1,
                       bytes_field(1, "x") + bytes_field(1, b) + bytes_field(2, "y_" + b) + bytes_field(4, "MatMul"));
  };
  auto folded = [](const std::string& name, const std::string& from) {
    return bytes_field(5, tensor(name, 1, {3, 2}, bytes_field(9, raw_bytes(std::vector<float>(6))))) +
           value_info(name, "pkg.onnxscript.optimizer.folded_from", from);
  };
  std::string signature = bytes_field(16, bytes_field(1, "pkg.torch.export.ExportedProgram.graph_signature") +
                                              bytes_field(2,
                                                          "p_a: PARAMETER target='a.weight'\n"
                                                          "p_b: PARAMETER target='b.weight'\n"
                                                          "b_c: BUFFER target='c'\n"));
  // val_0 is a's weight, fed to a MatMul; val_1 and val_2 both claim b's; val_3 feeds no MatMul; val_4 is from a
  // buffer; val_5 from two values.
  std::string graph = matmul("val_0") + matmul("val_1") + matmul("val_2") + matmul("val_4") + matmul("val_5") +
                      folded("val_0", "['a.weight']") + folded("val_1", "['b.weight']") +
                      folded("val_2", "['b.weight']") + folded("val_3", "['a.weight']") + folded("val_4", "['c']") +
                      folded("val_5", "['a.weight', 'val_9']") + signature;
  Checkpoint checkpoint = read(model(graph));
  ASSERT_EQ(checkpoint.tensors.size(), 6u);
  EXPECT_EQ(checkpoint.tensors[0].torch_name, "a.weight");
  EXPECT_EQ(checkpoint.tensors[0].torch_layout, TorchLayout::kTransposed);
  for (size_t i = 1; i < 6; ++i) {
    EXPECT_EQ(checkpoint.tensors[i].torch_name, std::nullopt) << i;
    EXPECT_EQ(checkpoint.tensors[i].role, TensorRole::kModel) << i;  // folded from the module's values: weights
  }
}

std::string external(const std::string& location, const std::string& offset, const std::string& length) {
  auto entry = [](const std::string& key, const std::string& value) {
    return bytes_field(13, bytes_field(1, key) + bytes_field(2, value));
  };
  return entry("location", location) + entry("offset", offset) + entry("length", length) + varint_field(14, 1);
}

class OnnxExternal : public testing::TempDir {
 protected:
  Checkpoint read_model(const std::string& data) {
    write("model.onnx", model(bytes_field(5, tensor("w", 1, {2}, data))));
    return read(map_file(root_ / "model.onnx"));
  }
};

TEST_F(OnnxExternal, ReadsTensorsInPlaceFromTheirFile) {
  write("model.onnx_data", std::string(8, 'x') + raw_bytes(std::vector<float>{1.5f, -4.0f}));
  Checkpoint checkpoint = read_model(external("model.onnx_data", "8", "8"));
  const TensorRecord& w = checkpoint.tensors.at(0);
  EXPECT_EQ(values_of(checkpoint, w), raw_bytes(std::vector<float>{1.5f, -4.0f}));
  EXPECT_EQ(checkpoint.files[0]->path(), root_ / "model.onnx");  // errors name the model
  uint64_t model_size = std::filesystem::file_size(root_ / "model.onnx");
  EXPECT_EQ(w.offset, model_size + 8);  // the data file joined behind the model
  EXPECT_EQ(code_of([&] { checkpoint.files[0]->view(model_size - 4, 8); }), ErrorCode::kOffsetPastEnd);
}

TEST_F(OnnxExternal, RefusesLocationsOutsideTheFolderAndRangesOutsideTheFile) {
  write("data", std::string(8, '\0'));
  write("../outside", std::string(8, '\0'));
  for (const std::string& escape : {external("../outside", "0", "8"), external("/etc/passwd", "0", "8")})
    EXPECT_EQ(code_of([&] { read_model(escape); }), ErrorCode::kPathEscape) << escape;
  for (const std::string& bad : {external(std::string("data\0../x", 9), "0", "8"), external("data", "4", "8"),
                                 external("data", "0", "4"), external("data", "-1", "8"), external("data", "9", "0")})
    EXPECT_EQ(code_of([&] { read_model(bad); }), ErrorCode::kInvalidOnnx) << bad;
  EXPECT_EQ(code_of([&] { read_model(external("absent", "0", "8")); }), ErrorCode::kNotFound);
}

TEST(Onnx, KnownByItsName) {
  std::string bytes = model(bytes_field(5, tensor("w", 1, {1}, fixed32_field(4, 1))));
  EXPECT_EQ(detect_format(*memory_source(bytes, "a/model.onnx")), FileFormat::kOnnx);
  EXPECT_EQ(detect_format(*memory_source(bytes, "a/model.bin")), FileFormat::kUnknown);
}

}  // namespace
}  // namespace precdetect
