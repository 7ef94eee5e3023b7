// fp8 weights with their scales beside them (quantize/fp8_scales.cpp): the block each scale covers, from the two
// shapes or config.json's `quantization_config.weight_block_size`, and the error contract for scales that fit no
// blocking. The values are checked against each producer's own dequantization in tests/e2e/test_fp8_blocks.py
// and tests/e2e/test_compressed_tensors.py.
#include <gtest/gtest.h>

#include "precdetect/quantize/scheme.h"
#include "scheme_test_util.h"
#include "test_util.h"

namespace precdetect {
namespace {

/// An fp8 weight of `weight`'s shape and its float32 scale (`w.weight` + `suffix`) of `scale`'s.
std::vector<TensorRecord> fp8_parts(std::vector<int64_t> weight, std::vector<int64_t> scale,
                                    const std::string& suffix = "_scale_inv") {
  return {testing::shaped_record("w.weight", DType::F8_E4M3, std::move(weight)),
          testing::shaped_record("w.weight" + suffix, DType::F32, std::move(scale))};
}

LinkedCheckpoint linked(std::vector<int64_t> weight, std::vector<int64_t> scale, const nlohmann::json& config = {},
                        const std::string& suffix = "_scale_inv") {
  return testing::linked_file(fp8_parts(std::move(weight), std::move(scale), suffix), config);
}

nlohmann::json blocks_of(int64_t rows, int64_t columns) {
  return {{"quantization_config", {{"quant_method", "fp8"}, {"weight_block_size", {rows, columns}}}}};
}

/// The link's description of the weight, which names the scale and its block.
std::string described(const LinkedCheckpoint& model) {
  EXPECT_TRUE(model.readings[0].link);
  EXPECT_EQ(model.tensors[1].role, TensorRole::kScale);
  return model.readings[0].link ? model.readings[0].link->describe().dump() : "";
}

TEST(Fp8Scales, EachScaleCoversTheBlockTheShapesOrTheConfigSay) {
  // DeepSeek-V3's 128 x 128 blocks, implied by the shapes
  EXPECT_EQ(described(linked({256, 384}, {2, 3})), R"({"tensor":"w.weight_scale_inv","block":[128,128]})");
  // a short last block, as DeepSeek's edges have: 129 rows in 2 blocks only by the configured 128
  EXPECT_EQ(described(linked({129, 256}, {2, 2}, blocks_of(128, 128))),
            R"({"tensor":"w.weight_scale_inv","block":[128,128]})");
  // a power of two with a short last block needs no config (255 rows in blocks of 128), nor a side that divides
  EXPECT_EQ(described(linked({255, 256}, {2, 2})), R"({"tensor":"w.weight_scale_inv","block":[128,128]})");
  EXPECT_EQ(described(linked({200, 256}, {2, 2})), R"({"tensor":"w.weight_scale_inv","block":[100,128]})");
  // compressed-tensors: one scale per row, and one per tensor whatever a configured block says
  EXPECT_EQ(described(linked({8, 16}, {8, 1}, {}, "_scale")), R"({"tensor":"w.weight_scale","block":[1,16]})");
  EXPECT_EQ(described(linked({8, 16}, {}, blocks_of(128, 128), "_scale")),
            R"({"tensor":"w.weight_scale","block":[8,16]})");
}

TEST(Fp8Scales, ScalesThatFitNoBlockingAreSizeMismatchNamingBothShapes) {
  struct Case {
    std::vector<int64_t> weight, scale;
    nlohmann::json config;
    std::string message;
  };
  const Case cases[] = {
      // 129 rows in 2 blocks: 65 neither divides 129 nor is a power of two
      {{129, 256},
       {2, 2},
       {},
       "m.safetensors: scale `w.weight_scale_inv` of shape [2, 2] fits no blocking of weight `w.weight` of shape "
       "[129, 256]"},
      // 7 scales of 200 rows tile only by 29, which no scheme writes
      {{200, 128},
       {7, 1},
       {},
       "m.safetensors: scale `w.weight_scale_inv` of shape [7, 1] fits no blocking of weight `w.weight` of shape "
       "[200, 128]"},
      {{256, 256},
       {2, 2},
       blocks_of(64, 64),
       "m.safetensors: scale `w.weight_scale_inv` of shape [2, 2] fits no blocking of weight `w.weight` of shape "
       "[256, 256] in the configured blocks of 64x64"},
      // more scales than rows
      {{4, 256},
       {8, 2},
       {},
       "m.safetensors: scale `w.weight_scale_inv` of shape [8, 2] fits no blocking of weight `w.weight` of shape "
       "[4, 256]"},
  };
  for (const Case& item : cases)
    EXPECT_EQ(testing::link_refusal(fp8_parts(item.weight, item.scale), item.config),
              std::pair(ErrorCode::kSizeMismatch, item.message));
}

}  // namespace
}  // namespace precdetect
