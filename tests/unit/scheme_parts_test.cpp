// Every scheme's parts, as its producer names and shapes them: after linking, each weight is read (a link) or named
// unread, and every other tensor of its module (scales, second-level scales, zero points, codes maps, bitmasks,
// shapes, group indices) has the role `scale`: none is ever a weight (role `model`).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "precdetect/quantize/linked_checkpoint.h"
#include "test_util.h"

namespace precdetect {
namespace {

TensorRecord record(const std::string& name, DType dtype, std::vector<int64_t> shape) {
  return testing::shaped_record(name, dtype, std::move(shape));
}

/// One scheme's module as its producer stores it: the records (the weight first), and what declares it.
struct Stored {
  std::string scheme;
  std::vector<TensorRecord> tensors;
  nlohmann::json config;
  std::map<std::string, std::string> subclasses = {};
  std::vector<DequantizeNode> nodes = {};
  bool read = true;  ///< its weight is read (else named unread)
};

nlohmann::json compressed_tensors(const char* format) {
  return {{"quantization_config", {{"quant_method", "compressed-tensors"}, {"format", format}}}};
}

std::vector<Stored> every_scheme() {
  const std::string int8_subclass =
      R"({"_type": "Int8Tensor", "_data": {"block_size": [1, 8], "dtype": {"_type": "torch.dtype", "_data": "bfloat16"}}, "_tensor_data_names": ["qdata", "scale"]})";
  return {
      {"fp8 with scales",
       {record("w.weight", DType::F8_E4M3, {8, 8}), record("w.weight_scale_inv", DType::F32, {1, 1})},
       {{"quantization_config", {{"quant_method", "fp8"}}}}},
      {"MLX affine",
       {record("w.weight", DType::U32, {4, 4}), record("w.scales", DType::F16, {4, 1}),
        record("w.biases", DType::F16, {4, 1})},
       {{"quantization", {{"group_size", 32}, {"bits", 4}}}}},
      {"MLX mxfp8 module of an nvfp4 model",
       {record("w.weight", DType::U32, {4, 8}), record("w.scales", DType::U8, {4, 1})},
       {{"quantization",
         {{"group_size", 16},
          {"bits", 4},
          {"mode", "nvfp4"},
          {"w", {{"group_size", 32}, {"bits", 8}, {"mode", "mxfp8"}}}}}}},
      {"GPTQ",
       {record("l.qweight", DType::I32, {4, 8}), record("l.scales", DType::F16, {1, 8}),
        record("l.qzeros", DType::I32, {1, 1}), record("l.g_idx", DType::I32, {32})},
       {{"quantization_config", {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 32}}}}},
      {"bitsandbytes nf4",
       {record("l.weight", DType::U8, {16, 1}), record("l.weight.absmax", DType::F32, {1}),
        record("l.weight.quant_map", DType::F32, {16}),
        record("l.weight.quant_state.bitsandbytes__nf4", DType::U8, {10})},
       nullptr},
      {"bitsandbytes LLM.int8", {record("m.weight", DType::I8, {4, 4}), record("m.SCB", DType::F32, {4})}, nullptr},
      {"optimum-quanto qint8",
       {record("q.weight._data", DType::I8, {4, 4}), record("q.weight._scale", DType::F32, {4, 1}),
        record("q.input_scale", DType::F32, {})},
       nullptr},
      {"compressed-tensors nvfp4",
       {record("n.weight_packed", DType::U8, {4, 8}), record("n.weight_scale", DType::F8_E4M3, {4, 1}),
        record("n.weight_global_scale", DType::F32, {1}), record("n.input_global_scale", DType::F32, {1})},
       compressed_tensors("nvfp4-pack-quantized")},
      {"compressed-tensors int-quantized",
       {record("i.weight", DType::I8, {4, 8}), record("i.weight_scale", DType::F32, {4, 1}),
        record("i.weight_zero_point", DType::I8, {4, 1})},
       compressed_tensors("int-quantized")},
      {"torchao Int8Tensor",
       {record("t._weight_qdata", DType::I8, {4, 8}), record("t._weight_scale", DType::F32, {4, 1})},
       nullptr,
       {{"t.weight", int8_subclass}}},
      {"ONNX DequantizeLinear",
       {record("c", DType::I8, {4, 4}), record("c_scale", DType::F32, {4}), record("c_zero_point", DType::I8, {4})},
       nullptr,
       {},
       {{.op_type = "DequantizeLinear", .codes = "c", .scale = "c_scale", .zero_point = "c_zero_point", .axis = 0}}},
      {"compressed-tensors sparse-24-bitmask",
       {record("s.compressed", DType::BF16, {4, 4}), record("s.bitmask", DType::U8, {4, 1}),
        record("s.shape", DType::I64, {2, 1})},
       {{"quantization_config",
         {{"quant_method", "compressed-tensors"}, {"sparsity_config", {{"format", "sparse-24-bitmask"}}}}}}},
      {"compressed-tensors mxfp4 (not read)",
       {record("m.weight_packed", DType::U8, {4, 16}), record("m.weight_scale", DType::U8, {4, 1})},
       compressed_tensors("mxfp4-pack-quantized"),
       {},
       {},
       false},
      {"compressed-tensors marlin-24 (not read)",
       {record("m.weight_packed", DType::I32, {4, 8}), record("m.scale_packed", DType::F16, {1, 8}),
        record("m.meta", DType::I16, {4, 2})},
       compressed_tensors("marlin-24"),
       {},
       {},
       false},
      {"AMD Quark nvfp4 (not read)",
       {record("k.weight", DType::U8, {4, 8}), record("k.weight_scale", DType::F8_E4M3, {4, 1}),
        record("k.weight_scale_2", DType::F32, {})},
       {{"quantization_config", {{"quant_method", "quark"}}}},
       {},
       {},
       false},
      {"AMD Quark AWQ export's qscales (not read)",
       {record("a.qweight", DType::I32, {8, 1}), record("a.qscales", DType::F16, {1, 8}),
        record("a.qqzeros", DType::I32, {1, 1})},
       {{"quantization_config", {{"quant_method", "quark"}}}},
       {},
       {},
       false},
  };
}

TEST(SchemeParts, NoPartOfAnySchemeIsAWeight) {
  for (Stored& stored : every_scheme()) {
    SCOPED_TRACE(stored.scheme);
    Checkpoint checkpoint;
    checkpoint.tensors = stored.tensors;
    checkpoint.tensor_subclasses = stored.subclasses;
    checkpoint.dequantize_nodes = stored.nodes;
    LinkedCheckpoint model = link_checkpoint(std::move(checkpoint), stored.config, "model");
    const RecordReading& weight = model.readings.front();
    EXPECT_EQ(weight.link.has_value(), stored.read);
    EXPECT_EQ(weight.unread_scheme.empty(), stored.read) << weight.unread_scheme;
    for (size_t i = 1; i < model.tensors.size(); ++i) {
      EXPECT_EQ(model.tensors[i].role, TensorRole::kScale) << model.tensors[i].name;
      EXPECT_FALSE(model.readings[i].link) << model.tensors[i].name;
    }
    if (weight.link)
      for (const std::string& part : weight.link->tensors()) {
        const auto found = std::find_if(model.tensors.begin(), model.tensors.end(),
                                        [&](const TensorRecord& r) { return r.name == part; });
        ASSERT_NE(found, model.tensors.end()) << part;
        EXPECT_EQ(found->role, TensorRole::kScale) << part;
      }
  }
}

}  // namespace
}  // namespace precdetect
