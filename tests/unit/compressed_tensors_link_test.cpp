// compressed-tensors' nvfp4-pack-quantized and int-quantized weights linked to their parts (quantize/nvfp4.cpp,
// quantize/int8_codes.cpp): the group each scale covers, and the error contract for parts that fit no groups,
// beside the code. The values are checked against compressed-tensors' own decompressors in
// tests/e2e/test_compressed_tensors.py.
#include <gtest/gtest.h>

#include "precdetect/quantize/scheme.h"
#include "scheme_test_util.h"
#include "test_util.h"

namespace precdetect {
namespace {

nlohmann::json compressed_tensors(const std::string& format) {
  return {{"quantization_config", {{"quant_method", "compressed-tensors"}, {"format", format}}}};
}

using testing::link_refusal;
using testing::linked_file;
using testing::shaped_record;

/// `l`'s nvfp4 parts: [8, bytes] packed codes, e4m3 scales of `groups` columns, a global scale of `globals` values.
std::vector<TensorRecord> nvfp4_parts(int64_t bytes, int64_t groups, int64_t globals = 1,
                                      DType scale_dtype = DType::F8_E4M3) {
  return {shaped_record("l.weight_packed", DType::U8, {8, bytes}),
          shaped_record("l.weight_scale", scale_dtype, {8, groups}),
          shaped_record("l.weight_global_scale", DType::F32, {globals})};
}

TEST(Nvfp4Link, PackedCodesAreReadInTheGroupsTheirScalesImply) {
  LinkedCheckpoint model = linked_file(nvfp4_parts(32, 4), compressed_tensors("nvfp4-pack-quantized"));
  ASSERT_TRUE(model.readings[0].link);
  EXPECT_EQ(
      model.readings[0].link->describe().dump(),
      R"({"tensor":"l.weight_scale","block":[1,16],"format":"nvfp4","global_scale":"l.weight_global_scale","bits":4})");
  for (size_t part = 1; part < model.tensors.size(); ++part) EXPECT_EQ(model.tensors[part].role, TensorRole::kScale);
}

TEST(Nvfp4Link, PartsThatFitNoGroupsOfTheCodesAreSizeMismatch) {
  const auto config = compressed_tensors("nvfp4-pack-quantized");
  // 64 codes a row in 3 groups; groups of an odd count of codes (64 in 64 groups of 1); two global scales; bf16 scales
  EXPECT_EQ(link_refusal(nvfp4_parts(32, 3), config),
            std::pair(ErrorCode::kSizeMismatch,
                      std::string("m.safetensors: nvfp4 weight `l.weight_packed` of shape [8, 32] (U8): scale "
                                  "`l.weight_scale` of shape [8, 3] (F8_E4M3) and global scale `l.weight_global_scale` "
                                  "(1 values, F32) fit no groups of its codes")));
  EXPECT_EQ(link_refusal(nvfp4_parts(32, 64), config).first, ErrorCode::kSizeMismatch);
  EXPECT_EQ(link_refusal(nvfp4_parts(32, 4, 2), config).first, ErrorCode::kSizeMismatch);
  EXPECT_EQ(link_refusal(nvfp4_parts(32, 4, 1, DType::BF16), config).first, ErrorCode::kSizeMismatch);
}

TEST(Nvfp4Link, WithoutTheFormatOrAPartTheCodesAreNotReadAndThePartsAreNeverWeights) {
  LinkedCheckpoint other_format = linked_file(nvfp4_parts(32, 3), compressed_tensors("pack-quantized"));
  EXPECT_FALSE(other_format.readings[0].link);
  std::vector<TensorRecord> no_global = nvfp4_parts(32, 4);
  no_global.pop_back();
  LinkedCheckpoint incomplete = linked_file(no_global, compressed_tensors("nvfp4-pack-quantized"));
  EXPECT_FALSE(incomplete.readings[0].link);
  EXPECT_EQ(incomplete.tensors[1].role, TensorRole::kScale);
}

/// `l`'s int8 weight of [8, 64] with a float32 scale of `scale_shape` and, where given, int8 zero points.
std::vector<TensorRecord> int8_parts(std::vector<int64_t> scale_shape, std::optional<std::vector<int64_t>> zeros = {}) {
  std::vector<TensorRecord> parts = {shaped_record("l.weight", DType::I8, {8, 64}),
                                     shaped_record("l.weight_scale", DType::F32, scale_shape)};
  if (zeros) parts.push_back(shaped_record("l.weight_zero_point", DType::I8, *zeros));
  return parts;
}

TEST(Int8CodesLink, AScaleIsOneForTheTensorOnePerRowOrOnePerGroupOfWholeInputs) {
  const auto config = compressed_tensors("int-quantized");
  const std::pair<std::vector<int64_t>, std::string> cases[] = {
      {{1}, R"({"tensor":"l.weight_scale","block":[8,64],"bits":8,"zero_points":null})"},
      {{8, 1}, R"({"tensor":"l.weight_scale","block":[1,64],"bits":8,"zero_points":null})"},
      {{8, 4}, R"({"tensor":"l.weight_scale","block":[1,16],"bits":8,"zero_points":null})"},
  };
  for (const auto& [shape, description] : cases) {
    LinkedCheckpoint model = linked_file(int8_parts(shape), config);
    ASSERT_TRUE(model.readings[0].link) << description;
    EXPECT_EQ(model.readings[0].link->describe().dump(), description);
  }
}

TEST(Int8CodesLink, ScalesOrZeroPointsThatFitNoRowsOrGroupsAreSizeMismatch) {
  const auto config = compressed_tensors("int-quantized");
  EXPECT_EQ(link_refusal(int8_parts({8, 3}), config),
            std::pair(ErrorCode::kSizeMismatch,
                      std::string("m.safetensors: int8 weight `l.weight` of shape [8, 64]: scale `l.weight_scale` of "
                                  "shape [8, 3] fits no rows or groups of it")));
  EXPECT_EQ(link_refusal(int8_parts({4, 1}), config).first, ErrorCode::kSizeMismatch);
  EXPECT_EQ(link_refusal(int8_parts({8, 1}, std::vector<int64_t>{8, 2}), config),
            std::pair(ErrorCode::kSizeMismatch,
                      std::string("m.safetensors: int8 weight `l.weight` of shape [8, 64]: scale `l.weight_scale` of "
                                  "shape [8, 1] with zero points of shape [8, 2] fits no rows or groups of it")));
}

}  // namespace
}  // namespace precdetect
