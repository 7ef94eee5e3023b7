// optimum-quanto's weights linked from the state dict it writes (quantize/quanto.cpp): the width of packed codes
// from the shapes or the quantization map, the scales' blocks, and the error contract for parts that fit neither,
// beside the code. The values are checked against quanto's own dequantize() in tests/e2e/test_quanto.py.
#include <gtest/gtest.h>

#include "precdetect/quantize/scheme.h"
#include "scheme_test_util.h"
#include "test_util.h"

namespace precdetect {
namespace {

using testing::link_refusal;
using testing::linked_file;
using testing::shaped_record;

nlohmann::json mapped(const std::string& qtype) {
  return {{"quantization_config", {{"quantization_map", {{"l", {{"weights", qtype}, {"activations", "none"}}}}}}}};
}

/// qint8 codes of [8, 16] with a float16 scale of `scale_shape`.
std::vector<TensorRecord> byte_parts(std::vector<int64_t> scale_shape) {
  return {shaped_record("l.weight._data", DType::I8, {8, 16}),
          shaped_record("l.weight._scale", DType::F16, std::move(scale_shape))};
}

/// Packed codes of `packed_rows` x 16 with a scale and a shift for each of 8 rows of groups.
std::vector<TensorRecord> packed_parts(int64_t packed_rows, std::vector<int64_t> shift_shape = {8, 1}) {
  return {shaped_record("l.weight._data._data", DType::U8, {packed_rows, 16}),
          shaped_record("l.weight._scale", DType::F16, {8, 1}),
          shaped_record("l.weight._shift", DType::F16, std::move(shift_shape))};
}

std::string message(const std::string& codes, const std::string& shape, const std::string& detail) {
  return "m.safetensors: quanto weight `" + codes + "` of shape [" + shape + "]: " + detail;
}

TEST(QuantoLink, CodesBecomeTheWeightOfTheirModuleAtTheWidthTheShapesOrTheMapGive) {
  LinkedCheckpoint bytes = linked_file(byte_parts({8, 1}));
  ASSERT_TRUE(bytes.readings[0].link);
  EXPECT_EQ(bytes.tensors[0].name, "l.weight");
  EXPECT_EQ(bytes.tensors[1].role, TensorRole::kScale);
  for (auto [packed_rows, width] : {std::pair{4, "qint4"}, std::pair{2, "qint2"}}) {
    LinkedCheckpoint packed = linked_file(packed_parts(packed_rows));
    ASSERT_TRUE(packed.readings[0].link) << width;
    EXPECT_EQ(packed.tensors[0].name, "l.weight");
    EXPECT_NE(packed.readings[0].link->describe().dump().find(width), std::string::npos)
        << packed.readings[0].link->describe().dump();
  }
}

TEST(QuantoLink, PartsThatFitNoPackingOrScaleAreSizeMismatchNamingWhy) {
  const std::pair<std::pair<ErrorCode, std::string>, std::string> cases[] = {
      {link_refusal(byte_parts({3, 1})),
       message("l.weight._data", "8, 16",
               "scale `l.weight._scale` of shape [3, 1] fits neither one scale per row of its 8 rows nor one in all")},
      {link_refusal(byte_parts({8, 1}), mapped("qint4")),
       message("l.weight._data", "8, 16", "the quantization map's `qint4` is not its stored I8")},
      {link_refusal(packed_parts(4), mapped("qint2")),
       message("l.weight._data._data", "4, 16", "the quantization map's `qint2` does not fit 8 rows of codes")},
      {link_refusal(packed_parts(3)),
       message("l.weight._data._data", "3, 16", "8 rows of scales fit no 2- or 4-bit packing")},
      {link_refusal(packed_parts(4, {8, 2})),
       message("l.weight._data._data", "4, 16", "shift `l.weight._shift` of shape [8, 2] is not its scale's [8, 1]")},
  };
  for (const auto& [got, expected] : cases) EXPECT_EQ(got, std::pair(ErrorCode::kSizeMismatch, expected));
}

TEST(QuantoLink, OneRowOfGroupsFitsBothWidthsAndIsNotReadByAGuess) {
  LinkedCheckpoint model = linked_file({shaped_record("l.weight._data._data", DType::U8, {1, 16}),
                                        shaped_record("l.weight._scale", DType::F16, {1, 1}),
                                        shaped_record("l.weight._shift", DType::F16, {1, 1})});
  EXPECT_FALSE(model.readings[0].link);
  EXPECT_EQ(model.tensors[1].role, TensorRole::kScale);
  EXPECT_EQ(model.tensors[2].role, TensorRole::kScale);
}

}  // namespace
}  // namespace precdetect
