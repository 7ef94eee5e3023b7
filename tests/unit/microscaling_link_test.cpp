// Microscaling formats linked to their scales (quantize/microscaling.cpp): gpt-oss's MXFP4 `_blocks` and
// `_scales`, and MLX's mxfp4, nvfp4 and mxfp8 modes, each module in the mode mlx-lm's settings give it; the error
// contract for scales that do not fit, beside the code. The values are checked against transformers' and
// mx.dequantize's in tests/e2e/test_microscaling.py.
#include <gtest/gtest.h>

#include "precdetect/quantize/scheme.h"
#include "scheme_test_util.h"
#include "test_util.h"

namespace precdetect {
namespace {

using testing::link_refusal;
using testing::linked_file;
using testing::shaped_record;

const nlohmann::json kGptOss = {{"quantization_config", {{"quant_method", "mxfp4"}}}};

nlohmann::json mlx(const std::string& mode, int64_t group) {
  return {{"quantization", {{"mode", mode}, {"group_size", group}, {"bits", mode == "mxfp8" ? 8 : 4}}}};
}

/// MLX's [8, 16] words of codes with uint8 scales of `groups` columns.
std::vector<TensorRecord> mlx_parts(int64_t groups) {
  return {shaped_record("l.weight", DType::U32, {8, 16}), shaped_record("l.scales", DType::U8, {8, groups})};
}

TEST(MicroscalingLink, EachFormatsCodesAreReadInItsGroups) {
  LinkedCheckpoint gpt_oss = linked_file(
      {shaped_record("e.down_blocks", DType::U8, {4, 6, 16}), shaped_record("e.down_scales", DType::U8, {4, 6})},
      kGptOss);
  ASSERT_TRUE(gpt_oss.readings[0].link);
  EXPECT_EQ(gpt_oss.readings[0].link->describe().dump(),
            R"({"tensor":"e.down_scales","block":[1,32],"format":"mxfp4","bits":4})");
  // 16 words a row: 128 fp4 codes (4 groups of 32, 8 of 16), or 64 fp8 codes (2 groups of 32)
  const std::tuple<std::string, int64_t, int64_t> modes[] = {{"mxfp4", 32, 4}, {"nvfp4", 16, 8}, {"mxfp8", 32, 2}};
  for (const auto& [mode, group, groups] : modes) {
    LinkedCheckpoint model = linked_file(mlx_parts(groups), mlx(mode, group));
    ASSERT_TRUE(model.readings[0].link) << mode;
    EXPECT_EQ(model.readings[0].link->describe()["format"], mode);
    EXPECT_EQ(model.tensors[1].role, TensorRole::kScale) << mode;
  }
}

TEST(MicroscalingLink, ScalesThatDoNotFitTheCodesAreSizeMismatchNamingTheFormatsRule) {
  EXPECT_EQ(link_refusal({shaped_record("e.down_blocks", DType::U8, {4, 6, 16}),
                          shaped_record("e.down_scales", DType::U8, {4, 5})},
                         kGptOss),
            std::pair(ErrorCode::kSizeMismatch,
                      std::string("m.safetensors: scales `e.down_scales` of shape [4, 5] do not fit codes "
                                  "`e.down_blocks` of shape [4, 6, 16]: MXFP4 stores 16 uint8 bytes of codes per "
                                  "uint8 scale")));
  EXPECT_EQ(link_refusal(mlx_parts(3), mlx("mxfp4", 32)),
            std::pair(ErrorCode::kSizeMismatch,
                      std::string("m.safetensors: scales `l.scales` of shape [8, 3] do not fit codes `l.weight` of "
                                  "shape [8, 16]: mxfp4 takes one uint8 scale per 32 codes")));
  EXPECT_EQ(link_refusal(mlx_parts(2), mlx("nvfp4", 16)).first, ErrorCode::kSizeMismatch);
}

TEST(MicroscalingLink, AModuleOfAnotherModeOrWithBiasesIsNotThisSchemes) {
  EXPECT_FALSE(linked_file(mlx_parts(4), mlx("affine", 32)).readings[0].link);
  EXPECT_FALSE(linked_file(mlx_parts(4), mlx("mxfp4", 31)).readings[0].link);  // fp4 groups are whole bytes
  std::vector<TensorRecord> with_biases = mlx_parts(4);
  with_biases.push_back(shaped_record("l.biases", DType::F16, {8, 4}));
  EXPECT_FALSE(linked_file(with_biases, mlx("mxfp4", 32)).readings[0].link);
}

}  // namespace
}  // namespace precdetect
