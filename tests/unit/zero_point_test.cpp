// GPTQ's, AWQ's and compressed-tensors' packed integer codes (quantize/zero_point.cpp): linked by config.json's
// quantization_config, analyzed as scale x (code - zero point) per group, and the error contract for words, scales,
// zero points and group indices that do not fit the weight, beside the code. The values are checked against each
// producer's own dequantization in tests/e2e/test_gptq.py, test_awq.py and test_compressed_tensors.py.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "precdetect/quantize/scheme.h"
#include "scheme_test_util.h"
#include "test_util.h"

namespace precdetect {
namespace {

using testing::analysis_refusal;
using testing::bf16_bytes;
using testing::raw_bytes;
using testing::StoredTensor;

const nlohmann::json kGptqV2 = {
    {"quantization_config",
     {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 8}, {"checkpoint_format", "gptq_v2"}}}};

constexpr int kInputs = 16, kOutputs = 4, kGroups = 2;

int code_at(int input, int output) { return (input + 3 * output) % 16; }
int zero_at(int group, int output) { return 8 + group - output; }
float scale_at(int group, int output) { return 0.5F * static_cast<float>(1 + group + output); }

/// A GPTQ v2 layer `l` of 4 outputs x 16 inputs in 2 groups of 8: `qweight` [2, 4] packs 8 inputs' codes a word,
/// `qzeros` [2, 1] a group's 4 outputs' zero points in a word, `scales` [2, 4] bfloat16, `g_idx` input / 8.
std::vector<StoredTensor> gptq_layer() {
  std::vector<uint32_t> qweight(2 * kOutputs), qzeros(kGroups);
  for (int input = 0; input < kInputs; ++input)
    for (int output = 0; output < kOutputs; ++output)
      qweight[static_cast<size_t>((input / 8) * kOutputs + output)] |= static_cast<uint32_t>(code_at(input, output))
                                                                       << (4 * (input % 8));
  std::vector<float> scales;
  for (int group = 0; group < kGroups; ++group)
    for (int output = 0; output < kOutputs; ++output) {
      qzeros[static_cast<size_t>(group)] |= static_cast<uint32_t>(zero_at(group, output)) << (4 * output);
      scales.push_back(scale_at(group, output));
    }
  std::vector<int32_t> g_idx(kInputs);
  for (int input = 0; input < kInputs; ++input) g_idx[static_cast<size_t>(input)] = input / 8;
  return {{"l.qweight", DType::I32, {2, kOutputs}, raw_bytes(qweight)},
          {"l.qzeros", DType::I32, {kGroups, 1}, raw_bytes(qzeros)},
          {"l.scales", DType::BF16, {kGroups, kOutputs}, bf16_bytes(scales)},
          {"l.g_idx", DType::I32, {kInputs}, raw_bytes(g_idx)}};
}

/// gptq_layer() with its tensor `name` replaced by `replacement`.
std::vector<StoredTensor> gptq_layer_with(const StoredTensor& replacement) {
  std::vector<StoredTensor> tensors = gptq_layer();
  for (StoredTensor& tensor : tensors)
    if (tensor.name == replacement.name) tensor = replacement;
  return tensors;
}

TEST(ZeroPoint, GptqCodesAreScaleTimesCodeMinusZeroPointPerGroup) {
  double abs_max = 0, sum_squares = 0;  // every product exact in bfloat16
  for (int input = 0; input < kInputs; ++input)
    for (int output = 0; output < kOutputs; ++output) {
      double value = (code_at(input, output) - zero_at(input / 8, output)) * double{scale_at(input / 8, output)};
      abs_max = std::max(abs_max, std::abs(value));
      sum_squares += value * value;
    }
  LinkedCheckpoint model = testing::linked_bytes(gptq_layer(), kGptqV2);
  ASSERT_TRUE(model.readings[0].link);
  for (size_t part = 1; part < 4; ++part) EXPECT_EQ(model.tensors[part].role, TensorRole::kScale);
  TensorStats stats = testing::analyzed(model, "l.qweight");
  EXPECT_EQ(stats.numel, static_cast<uint64_t>(kInputs * kOutputs));
  EXPECT_EQ(stats.abs_max, abs_max);
  EXPECT_EQ(stats.sum_squares, sum_squares);
}

TEST(ZeroPoint, WithoutTheirBitsTheCodesAreNotReadByAGuess) {
  nlohmann::json no_bits = kGptqV2;
  no_bits["quantization_config"].erase("bits");
  EXPECT_FALSE(testing::linked_bytes(gptq_layer(), no_bits).readings[0].link);
}

TEST(ZeroPoint, PartsThatDoNotFitTheWeightAreSizeMismatchNamingWhy) {
  std::vector<int32_t> out_of_range(kInputs, 0);
  out_of_range[3] = 2;
  const std::string prefix = "m.safetensors: quantized weight `l.qweight`: ";
  const std::pair<std::vector<StoredTensor>, std::string> cases[] = {
      {gptq_layer_with({"l.scales", DType::BF16, {kGroups, 5}, bf16_bytes(std::vector<float>(10, 1.0F))}),
       "scales `l.scales` of shape [2, 5] fit no groups of 4 x 16 values"},
      {gptq_layer_with({"l.qzeros", DType::I32, {kGroups, 2}, std::string(16, '\0')}),
       "`l.qzeros` of shape [2, 2] (I32) is not the 4-bit packing of 4 x 2 codes (expected int32 [2, 1])"},
      {gptq_layer_with({"l.g_idx", DType::I32, {kInputs - 1}, raw_bytes(std::vector<int32_t>(kInputs - 1, 0))}),
       "`l.g_idx` is not 16 int32 group indices"},
      {gptq_layer_with({"l.g_idx", DType::I32, {kInputs}, raw_bytes(out_of_range)}), "column 3 names group 2 of 2"},
  };
  for (const auto& [tensors, why] : cases)
    EXPECT_EQ(analysis_refusal(tensors, "l.qweight", kGptqV2), std::pair(ErrorCode::kSizeMismatch, prefix + why));
}

/// compressed-tensors' pack-quantized int4, symmetric, in groups of 8: `l.weight_packed` [4, 2] (4 outputs x 16
/// inputs, 8 codes a word), `l.weight_scale` [4, 2] and `l.weight_shape` `shape` of `shape_dtype`.
std::vector<StoredTensor> pack_quantized(std::vector<int64_t> shape, DType shape_dtype = DType::I64) {
  std::string shape_bytes =
      shape_dtype == DType::I64 ? raw_bytes(shape) : raw_bytes(std::vector<int32_t>(shape.begin(), shape.end()));
  return {{"l.weight_packed", DType::I32, {4, 2}, std::string(32, '\x77')},
          {"l.weight_scale", DType::BF16, {4, 2}, bf16_bytes(std::vector<float>(8, 1.0F))},
          {"l.weight_shape", shape_dtype, {2}, shape_bytes}};
}

TEST(ZeroPoint, CompressedTensorsCodesAreReadByTheirWeightShapeWhichTheWordsMustHold) {
  const nlohmann::json config = {
      {"quantization_config",
       {{"quant_method", "compressed-tensors"},
        {"format", "pack-quantized"},
        {"config_groups", {{"group_0", {{"weights", {{"type", "int"}, {"num_bits", 4}, {"group_size", 8}}}}}}}}}};
  // code 7 stored plus 8: -1 x 1 everywhere
  TensorStats read = testing::analyzed(testing::linked_bytes(pack_quantized({4, 16}), config), "l.weight_packed");
  EXPECT_EQ(read.numel, 64U);
  EXPECT_EQ(read.sum_squares, 64.0);
  const std::string prefix = "m.safetensors: quantized weight `l.weight_packed`: ";
  const std::pair<std::vector<StoredTensor>, std::string> cases[] = {
      {pack_quantized({4, 24}),
       "`l.weight_packed` of shape [4, 2] (I32) is not the 4-bit packing of 4 x 24 codes (expected int32 [4, 3])"},
      {pack_quantized({0, 16}), "0 x 16 values"},
      {pack_quantized({4, 16}, DType::I32), "`l.weight_shape` is not two int64 values"},
  };
  for (const auto& [tensors, why] : cases)
    EXPECT_EQ(analysis_refusal(tensors, "l.weight_packed", config), std::pair(ErrorCode::kSizeMismatch, prefix + why));
}

}  // namespace
}  // namespace precdetect
