// MLX's affine quantization linked from config.json's `quantization` (quantize/mlx_affine.cpp): its error contract
// beside its code. A weight whose scales fit its codes is read through the scheme; scales that do not fit are
// size_mismatch, named with both shapes; without settings to read the codes by, they are counted, never guessed,
// and the scales and biases are never weights. The values themselves are checked against mx.dequantize in
// tests/e2e/test_mlx_affine.py, on files mx.quantize and mx.save_safetensors wrote.
#include <gtest/gtest.h>

#include "precdetect/quantize/scheme.h"
#include "scheme_test_util.h"
#include "test_util.h"

namespace precdetect {
namespace {

/// `l.weight` of 8 rows of `words` uint32 words, with scales and biases of `groups` columns in `scale_dtype`.
std::vector<TensorRecord> affine_parts(int64_t words, int64_t groups, DType scale_dtype = DType::F16) {
  return {testing::shaped_record("l.weight", DType::U32, {8, words}),
          testing::shaped_record("l.scales", scale_dtype, {8, groups}),
          testing::shaped_record("l.biases", scale_dtype, {8, groups})};
}

using testing::link_refusal;
using testing::linked_file;

/// The refusal of scales of `scales` columns beside a weight of `words` words, at `bits` bits in groups of `group`.
std::string unfit(int64_t scales, int64_t words, int bits, int group) {
  return "m.safetensors: scales `l.scales` of shape [8, " + std::to_string(scales) +
         "] do not fit weight `l.weight` of shape [8, " + std::to_string(words) + "] at " + std::to_string(bits) +
         " bits in groups of " + std::to_string(group);
}

nlohmann::json settings(int64_t group_size, int64_t bits) {
  return {{"quantization", {{"group_size", group_size}, {"bits", bits}}}};
}

TEST(MlxAffine, CodesWhoseScalesFitAreReadWithTheirGroupAndBits) {
  // 64 words of 4-bit codes: 512 codes a row, 8 groups of 64
  LinkedCheckpoint model = linked_file(affine_parts(64, 8), settings(64, 4));
  ASSERT_TRUE(model.readings[0].link);
  EXPECT_EQ(model.readings[0].link->scheme().name, "MLX affine 2-8 bits");
  EXPECT_EQ(model.readings[0].link->describe().dump(),
            R"({"tensor":"l.scales","block":[1,64],"biases":"l.biases","bits":4})");
  EXPECT_EQ(model.tensors[1].role, TensorRole::kScale);
  EXPECT_EQ(model.tensors[2].role, TensorRole::kScale);
}

TEST(MlxAffine, ScalesThatDoNotFitTheCodesAreSizeMismatchNamingBothShapes) {
  const std::pair<std::pair<ErrorCode, std::string>, std::string> cases[] = {
      {link_refusal(affine_parts(64, 7), settings(64, 4)), unfit(7, 64, 4, 64)},
      {link_refusal(affine_parts(64, 9), settings(64, 4)), unfit(9, 64, 4, 64)},
      // 10 words of 3-bit codes are 106.67 codes: no whole number of codes a row
      {link_refusal(affine_parts(10, 1), settings(64, 3)), unfit(1, 10, 3, 64)},
      // 512 codes in groups of 96: the last group would be partial
      {link_refusal(affine_parts(64, 5), settings(96, 4)), unfit(5, 64, 4, 96)},
      // integer scales: no affine map mx.dequantize computes
      {link_refusal(affine_parts(64, 8, DType::I32), settings(64, 4)), unfit(8, 64, 4, 64)},
  };
  for (const auto& [got, expected] : cases) EXPECT_EQ(got, std::pair(ErrorCode::kSizeMismatch, expected));
}

TEST(MlxAffine, WithoutSettingsToReadTheCodesByTheyAreNotReadAndTheScalesAreNeverWeights) {
  const nlohmann::json no_settings[] = {nullptr,
                                        nlohmann::json::object(),
                                        settings(64, 7),
                                        settings(64, 1),
                                        settings(0, 4),
                                        settings(64, 9),
                                        {{"quantization", {{"group_size", 64}, {"bits", 4}, {"l", false}}}}};
  for (const nlohmann::json& config : no_settings) {
    LinkedCheckpoint model = linked_file(affine_parts(64, 8), config);
    EXPECT_FALSE(model.readings[0].link) << config.dump();
    EXPECT_EQ(model.tensors[1].role, TensorRole::kScale) << config.dump();
    EXPECT_EQ(model.tensors[2].role, TensorRole::kScale) << config.dump();
  }
}

}  // namespace
}  // namespace precdetect
