// torchao's subclasses linked from their descriptions (quantize/torchao.cpp): the codes renamed to the logical
// weight, the parts role scale, blockings that do not fit a named error, classes not read counted with their class.
#include <gtest/gtest.h>

#include "precdetect/core/error.h"
#include "precdetect/load/tensor_subclasses.h"
#include "precdetect/quantize/scheme.h"

namespace precdetect {
namespace {

TensorRecord record(const std::string& name, DType dtype, std::vector<int64_t> shape) {
  uint64_t numel = 1;
  for (int64_t side : shape) numel *= static_cast<uint64_t>(side);
  return {.name = name, .dtype = dtype, .shape = std::move(shape), .numel = numel};
}

std::string description(const std::string& type, const std::string& block_size) {
  return R"({"_type": ")" + type + R"(", "_data": {"block_size": )" + block_size +
         R"(, "dtype": {"_type": "torch.dtype", "_data": "bfloat16"}}, "_tensor_data_names": ["qdata", "scale", "zero_point"]})";
}

std::vector<TensorRecord> int8_parts(int64_t scale_rows) {
  return {record("l._weight_qdata", DType::I8, {4, 8}), record("l._weight_scale", DType::F32, {scale_rows, 1}),
          record("l._weight_zero_point", DType::I8, {scale_rows, 1})};
}

TEST(TorchaoLink, CodesBecomeTheLogicalWeightWithTheirPartsAsScales) {
  std::vector<TensorRecord> tensors = int8_parts(4);
  link_quantized(tensors, with_tensor_subclasses(nullptr, {{"l.weight", description("Int8Tensor", "[1, 8]")}}), "f");
  EXPECT_EQ(tensors[0].name, "l.weight");
  ASSERT_TRUE(tensors[0].scaled_by);
  EXPECT_EQ(tensors[0].scaled_by->scheme, ScaleScheme::kTorchao);
  EXPECT_EQ(tensors[0].scaled_by->block_cols, 8);
  EXPECT_EQ(tensors[0].scaled_by->result, DType::BF16);
  EXPECT_EQ(tensors[0].scaled_by->zero_points, "l._weight_zero_point");
  EXPECT_EQ(tensors[1].role, TensorRole::kScale);
  EXPECT_EQ(tensors[2].role, TensorRole::kScale);
}

TEST(TorchaoLink, PartsThatFitNoBlockingAreSizeMismatch) {
  for (auto [rows, block] : {std::pair{3, "[1, 8]"}, std::pair{4, "[1, 5]"}, std::pair{4, "[1, 1, 8]"}}) {
    std::vector<TensorRecord> tensors = int8_parts(rows);
    try {
      link_quantized(tensors, with_tensor_subclasses(nullptr, {{"l.weight", description("Int8Tensor", block)}}), "f");
      FAIL() << "accepted " << block;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kSizeMismatch) << e.what();
      EXPECT_NE(std::string(e.what()).find("torchao tensor `l.weight`"), std::string::npos) << e.what();
    }
  }
}

TEST(TorchaoLink, ClassesNotReadAreCountedWithTheirClass) {
  std::vector<TensorRecord> tensors = {record("l._weight_qdata", DType::U8, {4, 4}),
                                       record("l._weight_scale", DType::BF16, {1, 4}),
                                       record("l._weight_zero_point", DType::BF16, {1, 4})};
  link_quantized(tensors, with_tensor_subclasses(nullptr, {{"l.weight", description("Int4Tensor", "[1, 8]")}}), "f");
  EXPECT_EQ(tensors[0].name, "l._weight_qdata");
  EXPECT_FALSE(tensors[0].scaled_by);
  EXPECT_EQ(tensors[0].unread_scheme, "torchao Int4Tensor");
  EXPECT_EQ(tensors[1].role, TensorRole::kScale);
  EXPECT_EQ(tensors[2].role, TensorRole::kScale);
}

}  // namespace
}  // namespace precdetect
