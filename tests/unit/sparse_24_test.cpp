// compressed-tensors' 2:4-sparse bitmask weights (quantize/sparse_24.cpp): the kept values laid out where the bitmask
// says, zeros between them, and the error contract for a bitmask, shape or scale that does not fit, beside the code.
// The values are checked against compressed-tensors' own sparse24_bitmask_decompress in tests/e2e/test_sparse_24.py.
#include <gtest/gtest.h>

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

const nlohmann::json kSparse24 = {
    {"quantization_config",
     {{"quant_method", "compressed-tensors"}, {"sparsity_config", {{"format", "sparse-24-bitmask"}}}}}};

/// Module `l`'s dense 4 x 8 bfloat16 weight, 2:4-sparse: 4 x 4 kept values 1..16, every row's bitmask 0b01011010
/// (columns 1, 3, 4, 6 kept) unless `mask` says otherwise, and `l.shape` `dense`.
std::vector<StoredTensor> sparse_module(uint8_t mask = 0b01011010, std::vector<int64_t> dense = {4, 8}) {
  std::vector<float> kept(16);
  for (size_t i = 0; i < kept.size(); ++i) kept[i] = static_cast<float>(i + 1);
  return {{"l.compressed", DType::BF16, {4, 4}, bf16_bytes(kept)},
          {"l.bitmask", DType::U8, {4, 1}, std::string(4, static_cast<char>(mask))},
          {"l.shape", DType::I64, {2, 1}, raw_bytes(dense)}};
}

TEST(Sparse24, KeptValuesAndTheZerosBetweenThemAreTheDenseWeightUnderItsOwnName) {
  LinkedCheckpoint model = testing::linked_bytes(sparse_module(), kSparse24);
  ASSERT_TRUE(model.readings[0].link);
  EXPECT_EQ(model.tensors[0].name, "l.weight");
  EXPECT_EQ(model.tensors[1].role, TensorRole::kScale);
  EXPECT_EQ(model.tensors[2].role, TensorRole::kScale);
  EXPECT_EQ(model.readings[0].link->stored_values(), 16U);
  TensorStats stats = testing::analyzed(model, "l.weight");
  EXPECT_EQ(stats.numel, 32U);
  EXPECT_EQ(stats.zeros, 16U);
  EXPECT_EQ(stats.abs_max, 16.0);
  EXPECT_EQ(stats.sum_squares, 1496.0);  // 1^2 + ... + 16^2
}

TEST(Sparse24, WithoutTheConfigsSparsityFormatTheValuesAreNotRelaidOut) {
  LinkedCheckpoint model = testing::linked_bytes(sparse_module());
  EXPECT_FALSE(model.readings[0].link);
  EXPECT_EQ(model.tensors[0].name, "l.compressed");
}

TEST(Sparse24, PartsThatDoNotFitAreSizeMismatchNamingWhy) {
  auto with = [](std::vector<StoredTensor> tensors, size_t index, StoredTensor replacement) {
    tensors[index] = std::move(replacement);
    return tensors;
  };
  auto fp8 = [&](std::vector<int64_t> scale_shape) {
    std::vector<StoredTensor> tensors =
        with(sparse_module(), 0, {"l.compressed", DType::F8_E4M3, {4, 4}, std::string(16, '\x38')});
    if (!scale_shape.empty())
      tensors.push_back({"l.weight_scale", DType::BF16, scale_shape, bf16_bytes(std::vector<float>(3, 1.0F))});
    return tensors;
  };
  const std::string prefix = "m.safetensors: 2:4-sparse weight ";
  const std::pair<std::vector<StoredTensor>, std::string> cases[] = {
      {with(sparse_module(), 1, {"l.bitmask", DType::I8, {4, 1}, std::string(4, '\x5a')}),
       "`l.compressed` of shape [4, 4]: bitmask `l.bitmask` (I8), shape `l.shape` (I64, 2 values)"},
      {fp8({}),
       "`l.compressed` of shape [4, 4]: bitmask `l.bitmask` (U8), shape `l.shape` (I64, 2 values), and fp8 values "
       "without their weight_scale"},
      {with(sparse_module(), 1, {"l.bitmask", DType::U8, {4, 2}, std::string(8, '\x5a')}),
       "`l.compressed` of shape [4, 4]: bitmask `l.bitmask` of shape [4, 2] is not one bit per value of 4 x 8"},
      {fp8({3, 1}),
       "`l.compressed` of shape [4, 4]: scale `l.weight_scale` of shape [3, 1] is neither one, one per row nor one "
       "per group of its 4 x 8 values"},
      // read: the shape tensor and the bitmask's bits
      {sparse_module(0b01011010, {4, 12}), "`l.weight` of shape [4, 4]: `l.shape` says the dense weight is 4 x 12"},
      {sparse_module(0b01011011), "`l.weight`: row 0 of its bitmask keeps 5 values, its values are 4"},
  };
  for (const auto& [tensors, why] : cases)
    EXPECT_EQ(analysis_refusal(tensors, "l.weight", kSparse24), std::pair(ErrorCode::kSizeMismatch, prefix + why));
}

}  // namespace
}  // namespace precdetect
