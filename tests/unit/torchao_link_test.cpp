// torchao's subclasses linked from their descriptions (quantize/torchao.cpp): the codes renamed to the logical
// weight, the parts role scale, blockings that do not fit a named error, classes not read counted with their class.
#include <gtest/gtest.h>

#include "precdetect/core/error.h"
#include "precdetect/quantize/linked_checkpoint.h"
#include "precdetect/quantize/scheme.h"
#include "test_util.h"

namespace precdetect {
namespace {

TensorRecord record(const std::string& name, DType dtype, std::vector<int64_t> shape) {
  return testing::shaped_record(name, dtype, std::move(shape));
}

std::string description(const std::string& type, const std::string& block_size) {
  return R"({"_type": ")" + type + R"(", "_data": {"block_size": )" + block_size +
         R"(, "dtype": {"_type": "torch.dtype", "_data": "bfloat16"}}, "_tensor_data_names": ["qdata", "scale", "zero_point"]})";
}

/// The records linked as a checkpoint whose safetensors metadata describes `l.weight` as `described`.
LinkedCheckpoint linked(std::vector<TensorRecord> tensors, const std::string& described) {
  Checkpoint checkpoint;
  checkpoint.tensors = std::move(tensors);
  checkpoint.tensor_subclasses = {{"l.weight", described}};
  return link_checkpoint(std::move(checkpoint), nullptr, "f");
}

std::vector<TensorRecord> int8_parts(int64_t scale_rows) {
  return {record("l._weight_qdata", DType::I8, {4, 8}), record("l._weight_scale", DType::F32, {scale_rows, 1}),
          record("l._weight_zero_point", DType::I8, {scale_rows, 1})};
}

TEST(TorchaoLink, CodesBecomeTheLogicalWeightWithTheirPartsAsScales) {
  LinkedCheckpoint model = linked(int8_parts(4), description("Int8Tensor", "[1, 8]"));
  EXPECT_EQ(model.tensors[0].name, "l.weight");
  ASSERT_TRUE(model.readings[0].link);
  const Link& link = *model.readings[0].link;
  EXPECT_NE(link.scheme().name.find("torchao"), std::string_view::npos);
  EXPECT_EQ(link.describe().dump(),
            R"({"tensor":"l._weight_scale","block":[1,8],"zero_points":"l._weight_zero_point","result_dtype":"BF16"})");
  EXPECT_EQ(link.tensors(), (std::vector<std::string>{"l._weight_scale", "l._weight_zero_point"}));
  EXPECT_EQ(link.multipliers(), std::vector<std::string>{"l._weight_scale"});
  EXPECT_EQ(model.tensors[1].role, TensorRole::kScale);
  EXPECT_EQ(model.tensors[2].role, TensorRole::kScale);
}

TEST(TorchaoLink, PartsThatFitNoBlockingAreSizeMismatch) {
  for (auto [rows, block] : {std::pair{3, "[1, 8]"}, std::pair{4, "[1, 5]"}, std::pair{4, "[1, 1, 8]"}}) {
    try {
      linked(int8_parts(rows), description("Int8Tensor", block));
      FAIL() << "accepted " << block;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kSizeMismatch) << e.what();
      EXPECT_NE(std::string(e.what()).find("torchao tensor `l.weight`"), std::string::npos) << e.what();
    }
  }
}

TEST(TorchaoLink, ClassesNotReadAreCountedWithTheirClass) {
  LinkedCheckpoint model =
      linked({record("l._weight_qdata", DType::U8, {4, 4}), record("l._weight_scale", DType::BF16, {1, 4}),
              record("l._weight_zero_point", DType::BF16, {1, 4})},
             description("Int4Tensor", "[1, 8]"));
  EXPECT_EQ(model.tensors[0].name, "l._weight_qdata");
  EXPECT_FALSE(model.readings[0].link);
  EXPECT_EQ(model.readings[0].unread_scheme, "torchao Int4Tensor");
  EXPECT_EQ(model.tensors[1].role, TensorRole::kScale);
  EXPECT_EQ(model.tensors[2].role, TensorRole::kScale);
}

}  // namespace
}  // namespace precdetect
