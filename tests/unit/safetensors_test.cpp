// Every validation rule of the safetensors reader (docs/formats.md), fed as byte strings.
#include "precdetect/load/safetensors/safetensors.h"

#include <gtest/gtest.h>

#include "precdetect/core/error.h"
#include "precdetect/load/file_format.h"
#include "test_util.h"

namespace precdetect {
namespace {

using testing::safetensors_bytes;

SafetensorsHeader parse(const std::string& bytes) {
  auto source = memory_source(bytes, "model.safetensors");
  return read_safetensors_header(*source);
}

/// Parses `bytes`, expecting Error `code` whose message names the file and contains `detail`.
void expect_error(const std::string& bytes, ErrorCode code, const std::string& detail = "") {
  try {
    parse(bytes);
    FAIL() << "expected " << to_string(code);
  } catch (const Error& e) {
    EXPECT_EQ(to_string(e.code()), to_string(code)) << e.what();
    EXPECT_NE(std::string(e.what()).find("model.safetensors: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(detail), std::string::npos) << e.what();
  }
}

const std::string kOneF32 = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

TEST(Safetensors, ReadsTensorsInDataOrderWithAbsoluteOffsets) {
  std::string header = R"({"b":{"dtype":"F16","shape":[2],"data_offsets":[8,12]},)"
                       R"("a":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]},"__metadata__":{"format":"pt"}})";
  auto result = parse(safetensors_bytes(header, std::string(12, '\0')));
  ASSERT_EQ(result.tensors.size(), 2u);
  EXPECT_EQ(result.tensors[0].name, "a");
  EXPECT_EQ(result.tensors[0].offset, 8 + header.size());
  EXPECT_EQ(result.tensors[0].numel, 2u);
  EXPECT_EQ(result.tensors[0].shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(result.tensors[1].name, "b");
  EXPECT_EQ(result.tensors[1].dtype, DType::F16);
  EXPECT_EQ(result.tensors[1].offset, 8 + header.size() + 8);
  EXPECT_EQ(result.tensors[1].nbytes, 4u);
  EXPECT_EQ(result.metadata.at("format"), "pt");
}

TEST(Safetensors, AcceptsWhitespacePaddingScalarsAndEmptyTensors) {
  std::string header =
      "  \n"
      R"({"s":{"dtype":"BF16","shape":[],"data_offsets":[0,2]},)"
      R"("e":{"dtype":"F32","shape":[0,4],"data_offsets":[2,2]}})"
      "      ";
  auto result = parse(safetensors_bytes(header, "\x01\x02"));
  ASSERT_EQ(result.tensors.size(), 2u);
  EXPECT_EQ(result.tensors[0].name, "s");
  EXPECT_EQ(result.tensors[0].numel, 1u);  // 0-rank: one element
  EXPECT_EQ(result.tensors[1].name, "e");
  EXPECT_EQ(result.tensors[1].numel, 0u);
}

TEST(Safetensors, NullMetadataMeansNone) {
  auto result = parse(safetensors_bytes(R"({"__metadata__":null,"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                        std::string(8, '\0')));
  EXPECT_TRUE(result.metadata.empty());
  EXPECT_EQ(result.tensors.size(), 1u);
}

TEST(Safetensors, HeaderTooSmall) { expect_error("\r\n", ErrorCode::kHeaderTooSmall, "header too small"); }

TEST(Safetensors, HeaderTooLarge) {
  std::string bytes = safetensors_bytes("{}");
  uint64_t huge = kMaxSafetensorsHeader + 1;
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((huge >> (8 * i)) & 0xFF);
  expect_error(bytes, ErrorCode::kHeaderTooLarge, "header too large");
}

TEST(Safetensors, HeaderLongerThanFile) {
  std::string bytes = safetensors_bytes(kOneF32, std::string(8, '\0'));
  expect_error(bytes.substr(0, 20), ErrorCode::kInvalidHeaderLength, "invalid header length");
}

TEST(Safetensors, InvalidUtf8) {
  expect_error(safetensors_bytes("{\"\xff\":{}}"), ErrorCode::kInvalidUtf8, "UTF-8");
  expect_error(safetensors_bytes("{\"\xc0\xaf\":{}}"), ErrorCode::kInvalidUtf8);      // overlong '/'
  expect_error(safetensors_bytes("{\"\xed\xa0\x80\":{}}"), ErrorCode::kInvalidUtf8);  // surrogate
}

TEST(Safetensors, InvalidJson) { expect_error(safetensors_bytes("{\"w\": [1, 2"), ErrorCode::kInvalidJson); }

TEST(Safetensors, DuplicateKeys) {
  std::string top = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                    R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  expect_error(safetensors_bytes(top, std::string(8, '\0')), ErrorCode::kDuplicateKey, "`w`");
  std::string nested = R"({"w":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}})";
  expect_error(safetensors_bytes(nested, std::string(4, '\0')), ErrorCode::kDuplicateKey, "`dtype`");
}

TEST(Safetensors, UnknownDtype) {
  expect_error(safetensors_bytes(R"({"w":{"dtype":"F7","shape":[1],"data_offsets":[0,1]}})", "x"),
               ErrorCode::kUnknownDtype, "`F7`");
}

TEST(Safetensors, MalformedEntries) {
  expect_error(safetensors_bytes("[1]"), ErrorCode::kInvalidHeader, "not a JSON object");
  expect_error(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1]}})"), ErrorCode::kInvalidHeader, "`w`");
  expect_error(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "abcd"),
               ErrorCode::kInvalidHeader, "non-negative");
  expect_error(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", "abcd"),
               ErrorCode::kInvalidHeader, "[begin, end]");
  expect_error(safetensors_bytes(R"({"__metadata__":{"k":1}})"), ErrorCode::kInvalidHeader, "__metadata__");
  expect_error(safetensors_bytes(std::string(40, '[') + std::string(40, ']')), ErrorCode::kInvalidHeader, "deeply");
}

TEST(Safetensors, HoleBetweenTensors) {
  std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
  expect_error(safetensors_bytes(header, std::string(12, '\0')), ErrorCode::kInvalidOffset, "`b`");
}

TEST(Safetensors, OverlappingTensors) {
  std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  expect_error(safetensors_bytes(header, std::string(8, '\0')), ErrorCode::kInvalidOffset, "`b`");
}

TEST(Safetensors, FirstTensorMustStartAtZero) {
  expect_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::string(8, '\0')),
               ErrorCode::kInvalidOffset, "`a`");
}

TEST(Safetensors, EndBeforeBegin) {
  expect_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                 R"("b":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}})",
                                 std::string(4, '\0')),
               ErrorCode::kInvalidOffset, "`b`");
}

TEST(Safetensors, HugeOffsetsDoNotWrap) {
  expect_error(safetensors_bytes(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,18446744073709551615]}})", "x"),
               ErrorCode::kSizeMismatch, "`a`");
}

TEST(Safetensors, ShapeProductOverflows) {
  expect_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})",
                                 std::string(4, '\0')),
               ErrorCode::kValidationOverflow, "`a`");
  expect_error(safetensors_bytes(R"({"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,4]}})",
                                 std::string(4, '\0')),
               ErrorCode::kValidationOverflow, "`a`");
}

TEST(Safetensors, SubByteDtypeNeedsWholeBytes) {
  expect_error(safetensors_bytes(R"({"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", "ab"),
               ErrorCode::kMisalignedSlice, "`a`");
}

TEST(Safetensors, SizeMismatch) {
  expect_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, '\0')),
               ErrorCode::kSizeMismatch, "need 12 bytes");
}

TEST(Safetensors, TruncatedData) {
  expect_error(safetensors_bytes(kOneF32, std::string(5, '\0')), ErrorCode::kOffsetPastEnd, "truncated");
}

TEST(Safetensors, TrailingBytes) {
  expect_error(safetensors_bytes(kOneF32, std::string(9, '\0')), ErrorCode::kTrailingBytes, "1 trailing");
}

TEST(Safetensors, SniffsPlausibleFilesOnly) {
  auto format = [](std::string bytes) { return detect_format(*memory_source(std::move(bytes))); };
  EXPECT_EQ(format(safetensors_bytes(kOneF32, std::string(8, '\0'))), FileFormat::kSafetensors);
  EXPECT_EQ(format(safetensors_bytes("  {}")), FileFormat::kSafetensors);
  EXPECT_EQ(format("abc"), FileFormat::kUnknown);
  EXPECT_EQ(format(safetensors_bytes("[]")), FileFormat::kUnknown);
  EXPECT_EQ(format(std::string("PK\x03\x04", 4) + std::string(100, 'x')), FileFormat::kTorchZip);
}

}  // namespace
}  // namespace precdetect
