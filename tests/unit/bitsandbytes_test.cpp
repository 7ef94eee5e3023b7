// bitsandbytes' 4-bit and LLM.int8 weights (quantize/bitsandbytes.cpp): recognized by the tensors QuantState.as_dict
// and transformers write, analyzed as each code through its quant map times its block's absmax, and the error
// contract for a quantization state that lies or parts that do not fit it, beside the code. The values are checked
// against bitsandbytes' own dequantize_4bit and int8_vectorwise_dequant in tests/e2e/test_bitsandbytes.py.
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
using testing::raw_bytes;
using testing::StoredTensor;

/// The 16 values a code stands for: code - 8 (a table every code of which is distinct, -8 to 7).
std::vector<float> quant_map() {
  std::vector<float> map(16);
  for (int code = 0; code < 16; ++code) map[static_cast<size_t>(code)] = static_cast<float>(code - 8);
  return map;
}

/// `values` 4-bit codes two to a byte, the first in the high nibble: byte i is (7 i + 3) mod 256.
std::string codes_of(uint64_t values) {
  std::string bytes((values + 1) / 2, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((7 * i + 3) % 256);
  return bytes;
}

std::string state_json(int64_t blocksize, const std::string& dtype, int64_t rows, int64_t columns) {
  return nlohmann::json{{"quant_type", "nf4"}, {"blocksize", blocksize}, {"dtype", dtype}, {"shape", {rows, columns}}}
      .dump();
}

/// A 4-bit weight `l.weight` of 4 x 32 values in blocks of 64, as transformers saves it: its codes stored as `codes`
/// (uint8 [64, 1], or its bytes viewed as bfloat16 [32, 1]), its absmax, quant map and state `state`.
std::vector<StoredTensor> four_bit(const std::string& state, DType codes = DType::U8, uint64_t values = 128) {
  const auto bytes = static_cast<int64_t>((values + 1) / 2);
  return {{"l.weight", codes, {codes == DType::U8 ? bytes : bytes / 2, 1}, codes_of(values)},
          {"l.weight.absmax", DType::F32, {2}, raw_bytes(std::vector<float>{0.5F, 2.0F})},
          {"l.weight.quant_map", DType::F32, {16}, raw_bytes(quant_map())},
          {"l.weight.quant_state.bitsandbytes__nf4", DType::U8, {static_cast<int64_t>(state.size())}, state}};
}

TEST(Bitsandbytes, FourBitCodesAreTheirQuantMapTimesTheirBlocksAbsmaxInAnyStorageDtype) {
  // Independently: value k is quant_map[its nibble] x absmax[k / 64], each exact in float32.
  const std::string codes = codes_of(128);
  double abs_max = 0, sum_squares = 0;
  uint64_t zeros = 0;
  for (uint64_t k = 0; k < 128; ++k) {
    auto byte = static_cast<uint8_t>(codes[k / 2]);
    int code = k % 2 == 0 ? byte >> 4 : byte & 0xf;
    double value = (code - 8) * (k < 64 ? 0.5 : 2.0);
    abs_max = std::max(abs_max, std::abs(value));
    sum_squares += value * value;
    zeros += value == 0;
  }
  for (DType storage : {DType::U8, DType::BF16}) {
    SCOPED_TRACE(std::string(dtype_name(storage)));
    LinkedCheckpoint model = testing::linked_bytes(four_bit(state_json(64, "float32", 4, 32), storage));
    ASSERT_TRUE(model.readings[0].link);
    for (size_t part = 1; part < 4; ++part) EXPECT_EQ(model.tensors[part].role, TensorRole::kScale);
    TensorStats stats = testing::analyzed(model, "l.weight");
    EXPECT_EQ(stats.numel, 128U);
    EXPECT_EQ(stats.zeros, zeros);
    EXPECT_EQ(stats.abs_max, abs_max);
    EXPECT_EQ(stats.sum_squares, sum_squares);
  }
}

TEST(Bitsandbytes, FourBitCodesWithoutTheirAbsmaxOrQuantMapAreCountedNeverReadAsTheirStorageDtype) {
  for (const char* missing : {"l.weight.absmax", "l.weight.quant_map"}) {
    std::vector<StoredTensor> tensors = four_bit(state_json(64, "float32", 4, 32), DType::BF16);
    std::erase_if(tensors, [&](const StoredTensor& tensor) { return tensor.name == missing; });
    LinkedCheckpoint model = testing::linked_bytes(tensors);
    EXPECT_FALSE(model.readings[0].link) << missing;
    EXPECT_EQ(model.readings[0].unread_scheme, "bitsandbytes nf4, without its absmax or quant map") << missing;
  }
}

TEST(Bitsandbytes, AStateThatIsNotItsJsonIsInvalidJsonNamingWhy) {
  const std::string prefix = "m.safetensors: quantization state of `l.weight` is not bitsandbytes' JSON (";
  const std::pair<std::string, std::string> cases[] = {
      {state_json(0, "float32", 4, 32), "a block size is not positive)"},
      {state_json(1 << 21, "float32", 4, 32), "block size 2097152 is no bitsandbytes block size)"},
      {state_json(64, "int8", 4, 32), "dtype int8)"},
  };
  for (const auto& [state, why] : cases)
    EXPECT_EQ(analysis_refusal(four_bit(state), "l.weight"), std::pair(ErrorCode::kInvalidJson, prefix + why));
  auto [code, message] = analysis_refusal(four_bit("{\"blocksize\": 64,"), "l.weight");
  EXPECT_EQ(code, ErrorCode::kInvalidJson);
  EXPECT_TRUE(message.starts_with(prefix + "[json.exception.parse_error")) << message;
}

TEST(Bitsandbytes, PartsThatDoNotFitTheStateAreSizeMismatchNamingBoth) {
  // the state says 130 values: 65 bytes of codes and 3 blocks, where 64 bytes and 2 are stored
  EXPECT_EQ(analysis_refusal(four_bit(state_json(64, "float32", 5, 26)), "l.weight"),
            std::pair(ErrorCode::kSizeMismatch,
                      std::string("m.safetensors: 4-bit weight `l.weight`: its codes (64 bytes), absmax (2), quant map "
                                  "(16) or nested tensors do not fit its quantization state (130 values in blocks of "
                                  "64)")));
  // LLM.int8: one SCB per row
  const std::vector<StoredTensor> int8 = {{"l.weight", DType::I8, {4, 8}, std::string(32, '\x01')},
                                          {"l.SCB", DType::F32, {3}, raw_bytes(std::vector<float>{1, 2, 3})}};
  EXPECT_EQ(analysis_refusal(int8, "l.weight"),
            std::pair(ErrorCode::kSizeMismatch,
                      std::string("m.safetensors: int8 weight `l.weight` has 4 rows but its SCB 3 values")));
}

}  // namespace
}  // namespace precdetect
