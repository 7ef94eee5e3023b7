// ONNX's DequantizeLinear as the loader records its nodes (quantize/dequantize_linear.cpp): codes linked to the
// scale, zero point, axis and block size their nodes agree on, analyzed as (code - zero point) x scale, and the
// error contract for a scale or zero point that fits no axis or block of the codes, beside the code. The values are
// checked against onnxruntime's own DequantizeLinear in tests/e2e/test_onnx_use.py.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "precdetect/quantize/scheme.h"
#include "scheme_test_util.h"
#include "test_util.h"

namespace precdetect {
namespace {

using testing::raw_bytes;
using testing::StoredTensor;

/// A node reading `w_q` with `w_scale` and `w_zp` (none where `zero_point` is empty) along `axis`.
DequantizeNode node(int64_t axis = 0, int64_t block_size = 0, std::string zero_point = "w_zp") {
  return {.op_type = "DequantizeLinear",
          .codes = "w_q",
          .scale = "w_scale",
          .zero_point = std::move(zero_point),
          .axis = axis,
          .block_size = block_size};
}

/// Codes `w_q` [4, 8], as int8 their value (row + column) - 6 (of another `codes_dtype`, zeros); `w_scale` of
/// `scale_shape` and `scale_dtype`, each 0.25; `w_zp` of `zero_shape` and `zero_dtype`, each 2 (none where `zero_shape`
/// is empty); read by `nodes`.
LinkedCheckpoint linked(std::vector<DequantizeNode> nodes, std::vector<int64_t> scale_shape = {4},
                        std::vector<int64_t> zero_shape = {4}, DType scale_dtype = DType::F32,
                        DType zero_dtype = DType::I8, DType codes_dtype = DType::I8) {
  std::vector<int8_t> codes;
  for (int row = 0; row < 4; ++row)
    for (int column = 0; column < 8; ++column) codes.push_back(static_cast<int8_t>(row + column - 6));
  uint64_t scales = 1, zeros = 1;
  for (int64_t side : scale_shape) scales *= static_cast<uint64_t>(side);
  for (int64_t side : zero_shape) zeros *= static_cast<uint64_t>(side);
  std::string scale_bytes = scale_dtype == DType::F64 ? raw_bytes(std::vector<double>(scales, 0.25))
                                                      : raw_bytes(std::vector<float>(scales, 0.25F));
  std::string codes_bytes =
      codes_dtype == DType::I8 ? raw_bytes(codes) : std::string(*dtype_bytes(codes_dtype, 32), '\0');
  std::vector<StoredTensor> tensors = {{"w_q", codes_dtype, {4, 8}, codes_bytes},
                                       {"w_scale", scale_dtype, scale_shape, scale_bytes}};
  if (!zero_shape.empty())
    tensors.push_back({"w_zp", zero_dtype, zero_shape, raw_bytes(std::vector<int8_t>(zeros, 2))});
  Checkpoint checkpoint = testing::stored_checkpoint(tensors);
  checkpoint.dequantize_nodes = std::move(nodes);
  return link_checkpoint(std::move(checkpoint), nullptr, "m.onnx");
}

TEST(DequantizeLinear, CodesAreCodeMinusZeroPointTimesScaleAlongTheNodesAxis) {
  double abs_max = 0, sum_squares = 0;  // (code - 2) x 0.25, each exact in float32
  for (int row = 0; row < 4; ++row)
    for (int column = 0; column < 8; ++column) {
      double value = (row + column - 6 - 2) * 0.25;
      abs_max = std::max(abs_max, std::abs(value));
      sum_squares += value * value;
    }
  for (int64_t axis : {0, -2}) {  // a negative axis counts from the last dimension
    LinkedCheckpoint model = linked({node(axis)});
    ASSERT_TRUE(model.readings[0].link) << axis;
    EXPECT_EQ(model.tensors[1].role, TensorRole::kScale);
    EXPECT_EQ(model.tensors[2].role, TensorRole::kScale);
    TensorStats stats = testing::analyzed(model, "w_q");
    EXPECT_EQ(stats.numel, 32U);
    EXPECT_EQ(stats.abs_max, abs_max);
    EXPECT_EQ(stats.sum_squares, sum_squares);
  }
}

TEST(DequantizeLinear, CodesTwoNodesReadDifferentlyStayTheIntegersTheyAre) {
  LinkedCheckpoint model = linked({node(0), node(0, 0, "")});
  EXPECT_FALSE(model.readings[0].link);
  EXPECT_TRUE(model.readings[0].unread_scheme.empty());
}

TEST(DequantizeLinear, CodesOfATypeItDoesNotReadAreCountedWithTheirType) {
  LinkedCheckpoint model = linked({node(0, 0, "")}, {4}, {}, DType::F32, DType::I8, DType::U32);
  EXPECT_FALSE(model.readings[0].link);
  EXPECT_EQ(model.readings[0].unread_scheme, "ONNX DequantizeLinear of U32 codes");
}

std::pair<ErrorCode, std::string> refusal(std::vector<DequantizeNode> nodes, std::vector<int64_t> scale_shape = {4},
                                          std::vector<int64_t> zero_shape = {4}, DType scale_dtype = DType::F32,
                                          DType zero_dtype = DType::I8) {
  try {
    linked(std::move(nodes), std::move(scale_shape), std::move(zero_shape), scale_dtype, zero_dtype);
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  return {ErrorCode::kInternal, "linked"};
}

TEST(DequantizeLinear, AScaleOrZeroPointThatFitsNoAxisOrBlockIsInvalidOnnxNamingWhy) {
  const std::string prefix = "m.onnx: DequantizeLinear of `w_q` (I8, shape [4, 8]): ";
  const std::pair<std::pair<ErrorCode, std::string>, std::string> cases[] = {
      {refusal({node()}, {4}, {4}, DType::F64), "scale `w_scale` is F64, not float32, float16 or bfloat16"},
      {refusal({node()}, {4}, {4}, DType::F32, DType::U8), "zero point `w_zp` is U8, its codes I8"},
      {refusal({node()}, {4}, {2}), "zero point `w_zp` of shape [2], its scale's [4]"},
      {refusal({node(2)}), "axis 2 is out of range for codes of rank 2"},
      {refusal({node(0, 0, "")}, {8}, {}),
       "scale `w_scale` of shape [8] is neither one value nor one per slice along axis 0 (4)"},
      {refusal({node(1, -1, "")}, {4, 2}, {}), "block_size -1 is negative"},
      {refusal({node(1, 3, "")}, {4, 2}, {}),
       "scale `w_scale` of shape [4, 2] is not one per block of 3 along axis 1 ([4, 3])"},
  };
  for (const auto& [got, why] : cases) EXPECT_EQ(got, std::pair(ErrorCode::kInvalidOnnx, prefix + why));
}

}  // namespace
}  // namespace precdetect
