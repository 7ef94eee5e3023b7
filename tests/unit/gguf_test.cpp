// The GGUF reader's contract on bytes built here, field by field as ggml's docs/gguf.md lays them out: where each
// tensor lies, and the exact error for each lie a file can tell (truncated, overflowing, misplaced). Files written by
// gguf-py itself are read end to end in tests/e2e/test_formats.py.
#include "precdetect/load/gguf/gguf.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "precdetect/core/error.h"
#include "test_util.h"

namespace precdetect {
namespace {

using testing::raw_bytes;

template <typename T>
std::string le(T value) {
  return raw_bytes(std::vector<T>{value});
}

/// A GGUF string: its uint64 length, then its bytes.
std::string text(const std::string& value) { return le<uint64_t>(value.size()) + value; }

constexpr uint32_t kUint32 = 4, kString = 8, kArray = 9;

/// A key/value whose value's bytes are given whole.
std::string key_value(const std::string& key, uint32_t type, const std::string& value) {
  return text(key) + le(type) + value;
}

/// A tensor info: name, dimensions (innermost first, as GGUF lists them), ggml type, offset in the data section.
std::string tensor_info(const std::string& name, const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset) {
  std::string info = text(name) + le<uint32_t>(dims.size());
  for (uint64_t dim : dims) info += le(dim);
  return info + le(type) + le(offset);
}

/// "GGUF", version 3, the counts, the key/values and tensor infos, padding to `alignment`, then `data`.
std::string gguf(const std::vector<std::string>& tensors, const std::vector<std::string>& key_values,
                 const std::string& data = "", uint32_t version = 3, size_t alignment = 32) {
  std::string bytes = "GGUF" + le(version) + le<uint64_t>(tensors.size()) + le<uint64_t>(key_values.size());
  for (const std::string& kv : key_values) bytes += kv;
  for (const std::string& info : tensors) bytes += info;
  bytes.resize((bytes.size() + alignment - 1) / alignment * alignment, '\0');
  return bytes + data;
}

Checkpoint read(const std::string& bytes) {
  Checkpoint checkpoint;
  checkpoint.files.push_back(memory_source(bytes, "m.gguf"));
  read_gguf(checkpoint, 0);
  return checkpoint;
}

/// The message read_gguf throws for `bytes`; every one of them is kInvalidGguf.
std::string error_of(const std::string& bytes) {
  try {
    read(bytes);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidGguf) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "read without an error";
  return "";
}

const std::string kSixFloats = raw_bytes(std::vector<float>{1, 2, 3, 4, 5, 6});

TEST(Gguf, PlacesEachTensorAfterTheAlignedHeaderWithItsShapeAsPyTorchWritesIt) {
  // 24 bytes of preamble, a key/value of 9 + 4 + 4 bytes, then 9 + 4 + 16 + 4 + 8 of tensor info: 82 bytes, padded
  // to 96 (the default alignment, 32), where the tensor's bytes start.
  std::string bytes = gguf({tensor_info("w", {3, 2}, 0, 0)}, {key_value("n", kUint32, le<uint32_t>(7))}, kSixFloats);
  Checkpoint checkpoint = read(bytes);
  ASSERT_EQ(checkpoint.tensors.size(), 1u);
  const TensorRecord& w = checkpoint.tensors[0];
  EXPECT_EQ(w.name, "w");
  EXPECT_EQ(w.dtype, DType::F32);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w.numel, 6u);
  EXPECT_EQ(w.offset, 96u);
  EXPECT_EQ(w.nbytes, 24u);
  auto metadata = nlohmann::json::parse(checkpoint.metadata);
  EXPECT_EQ(metadata["version"], 3);
  EXPECT_EQ(metadata["alignment"], 32);
  EXPECT_EQ(metadata["key_values"], nlohmann::json({{"n", 7}}));
}

TEST(Gguf, ATruncatedFileNamesTheRecordItStoppedIn) {
  std::string whole = gguf({}, {key_value("general.name", kString, text("tiny"))});
  // Cut inside the value's string: its length (at 24 + 8 + 12 + 4 = 48) says 4 bytes, 2 are left.
  EXPECT_EQ(error_of(whole.substr(0, 58)), "m.gguf: invalid GGUF at offset 48: truncated: 4 more bytes needed");
  EXPECT_EQ(error_of(whole.substr(0, 10)), "m.gguf: invalid GGUF at offset 8: truncated: 8 more bytes needed");
  EXPECT_EQ(error_of("GGU"), "m.gguf: invalid GGUF at offset 0: truncated: 4 more bytes needed");
}

TEST(Gguf, NamesTheVersionsAndTheByteOrderItDoesNotRead) {
  EXPECT_EQ(error_of("GGUX" + std::string(20, '\0')), "m.gguf: invalid GGUF at offset 0: no GGUF magic");
  EXPECT_EQ(error_of(gguf({}, {}, "", 1)),
            "m.gguf: invalid GGUF at offset 4: version 1: precdetect reads versions 2 and 3");
  EXPECT_EQ(error_of(gguf({}, {}, "", 4)),
            "m.gguf: invalid GGUF at offset 4: version 4: precdetect reads versions 2 and 3");
  EXPECT_EQ(error_of(gguf({}, {}, "", 0x03000000)),  // 3, written big-endian
            "m.gguf: invalid GGUF at offset 4: a big-endian GGUF file (written for s390x): precdetect reads "
            "little-endian ones");
  EXPECT_EQ(read(gguf({}, {}, "", 2)).tensors.size(), 0u);
}

TEST(Gguf, RefusesCountsNoFileHolds) {
  std::string tensors = "GGUF" + le<uint32_t>(3) + le<uint64_t>((1 << 20) + 1) + le<uint64_t>(0);
  EXPECT_EQ(error_of(tensors),
            "m.gguf: invalid GGUF at offset 8: 1048577 tensors: more than the 1048576 precdetect accepts");
  std::string keys = "GGUF" + le<uint32_t>(3) + le<uint64_t>(0) + le<uint64_t>(UINT64_MAX);
  EXPECT_EQ(error_of(keys),
            "m.gguf: invalid GGUF at offset 16: 18446744073709551615 key/values: more than the "
            "1048576 precdetect accepts");
  // One key/value announced, none written: the key's length is missing.
  std::string absent = "GGUF" + le<uint32_t>(3) + le<uint64_t>(0) + le<uint64_t>(1);
  EXPECT_EQ(error_of(absent), "m.gguf: invalid GGUF at offset 24: truncated: 8 more bytes needed");
}

TEST(Gguf, ValuesThatLieAboutTheirTypeOrLength) {
  // The value's type lies at 24 + 8 + 1 = 33.
  EXPECT_EQ(error_of(gguf({}, {key_value("k", 13, "")})), "m.gguf: invalid GGUF at offset 33: unknown value type 13");
  // An array of 2^40 uint32 values in a file of a few bytes: refused before a value is read (its length at 41).
  std::string huge = le(kUint32) + le<uint64_t>(uint64_t{1} << 40);
  EXPECT_EQ(error_of(gguf({}, {key_value("k", kArray, huge)})),
            "m.gguf: invalid GGUF at offset 41: an array of 1099511627776 uint32 values runs past the end");
  // Arrays of arrays: four deep are read, a fifth is refused (the error names the fourth's length, at 41 + 3 * 12).
  auto nested = [](int depth) {
    std::string array = le(kUint32) + le<uint64_t>(0);
    for (int level = 1; level < depth; ++level) array = le(kArray) + le<uint64_t>(1) + array;
    return gguf({}, {key_value("k", kArray, array)});
  };
  EXPECT_EQ(nlohmann::json::parse(read(nested(4)).metadata)["key_values"]["k"], nlohmann::json::parse("[[[[]]]]"));
  EXPECT_EQ(error_of(nested(5)), "m.gguf: invalid GGUF at offset 77: arrays nest too deeply");
  std::string twice = key_value("k", kUint32, le<uint32_t>(1));
  EXPECT_EQ(error_of(gguf({}, {twice, twice})), "m.gguf: invalid GGUF at offset 41: key `k` appears twice");
}

TEST(Gguf, AnAlignmentIsAPowerOfTwoInAUint32) {
  EXPECT_EQ(error_of(gguf({}, {key_value("general.alignment", kUint32, le<uint32_t>(24))})),
            "m.gguf: invalid GGUF at offset 49: general.alignment must be a power of two, not 24");
  EXPECT_EQ(error_of(gguf({}, {key_value("general.alignment", 10, le<uint64_t>(64))})),
            "m.gguf: invalid GGUF at offset 49: general.alignment must be a uint32, not a uint64");
  // A file's own alignment places its data: 24 + 33 + 33 = 90 bytes of header, data at 128.
  std::string aligned = gguf({tensor_info("w", {6}, 0, 0)}, {key_value("general.alignment", kUint32, le<uint32_t>(64))},
                             kSixFloats, 3, 64);
  EXPECT_EQ(read(aligned).tensors[0].offset, 128u);
}

TEST(Gguf, TensorInfosThatCannotDescribeATensor) {
  // The dimension count lies at 24 + 8 + 1 = 33, the type after the dimensions, the offset after the type.
  EXPECT_EQ(error_of(gguf({tensor_info("w", {1, 1, 1, 1, 1}, 0, 0)}, {})),
            "m.gguf: invalid GGUF at offset 33: tensor `w` has 5 dimensions, at most 4");
  EXPECT_EQ(error_of(gguf({tensor_info("w", {uint64_t{1} << 32, uint64_t{1} << 32}, 0, 0)}, {})),
            "m.gguf: invalid GGUF at offset 33: tensor `w`: element count overflows");
  EXPECT_EQ(error_of(gguf({tensor_info("w", {uint64_t{1} << 63}, 0, 0)}, {})),
            "m.gguf: invalid GGUF at offset 33: tensor `w`: element count overflows");
  EXPECT_EQ(error_of(gguf({tensor_info("w", {6}, 4, 0)}, {})),  // 4: Q4_2, retired from ggml
            "m.gguf: invalid GGUF at offset 45: tensor `w`: type 4 (Q4_2) was retired from ggml, whose readers refuse "
            "it");
  EXPECT_EQ(error_of(gguf({tensor_info("w", {33}, 8, 0)}, {})),  // Q8_0's blocks hold 32 values
            "m.gguf: invalid GGUF at offset 45: tensor `w`: rows of 33 elements are not whole Q8_0 blocks of 32");
  EXPECT_EQ(error_of(gguf({tensor_info("w", {6}, 0, 8)}, {})),
            "m.gguf: invalid GGUF at offset 49: tensor `w`: offset 8 is not a multiple of the alignment 32");
}

TEST(Gguf, TensorsLieInsideTheFileAndApart) {
  // Two infos of 33 bytes: a header of 90 bytes, data from 96.
  std::string both = raw_bytes(std::vector<float>(16, 1.0F));
  std::string overlapping = gguf({tensor_info("a", {16}, 0, 0), tensor_info("b", {8}, 0, 32)}, {}, both);
  EXPECT_EQ(error_of(overlapping), "m.gguf: invalid GGUF at offset 128: tensor `b` overlaps the tensor before it");
  std::string apart = gguf({tensor_info("a", {8}, 0, 0), tensor_info("b", {8}, 0, 32)}, {}, both);
  Checkpoint checkpoint = read(apart);
  EXPECT_EQ(checkpoint.tensors[0].offset, 96u);
  EXPECT_EQ(checkpoint.tensors[1].offset, 128u);
  EXPECT_EQ(error_of(apart.substr(0, apart.size() - 1)),
            "m.gguf: invalid GGUF at offset 96: tensor `b`: [32, +32) of the data runs past the end of the file "
            "(truncated?)");
  std::string far = gguf({tensor_info("a", {8}, 0, UINT64_MAX - 31)}, {}, both);  // one info: data from 64
  EXPECT_EQ(error_of(far),
            "m.gguf: invalid GGUF at offset 64: tensor `a`: [18446744073709551584, +32) of the data "
            "runs past the end of the file (truncated?)");
}

/// Collects the chat templates a GGUF names.
struct Templates final : PickleVisitor {
  void pickles(std::span<const std::byte>, const std::string&, uint64_t, size_t) override {}
  void log(const pickle::PickleLog&, const std::string&) override {}
  void nested(const FormatFile&, const std::string&) override {}
  void unverified(const std::string&, std::string_view) override {}
  void tampering(FileTampering, const std::string&, std::string) override {}
  void chat_template(std::string_view text, const std::string& where) override {
    found.emplace_back(where, std::string(text));
  }
  void keras_config(std::string_view, const std::string&) override {}
  void reaches(const std::string&, const std::filesystem::path&, std::string) override {}
  uint64_t decompression_left() const override { return uint64_t{1} << 30; }
  void decompressed(uint64_t) override {}
  std::vector<std::pair<std::string, std::string>> found;
};

TEST(Gguf, NamesItsChatTemplatesAndFailsWhereReadingWould) {
  std::string bytes = gguf({}, {key_value("tokenizer.chat_template", kString, text("{{ x }}")),
                                key_value("tokenizer.chat_templates", kString, text("not one")),
                                key_value("tokenizer.chat_template.tool_use", kString, text("{{ y }}"))});
  Templates visitor;
  name_gguf_templates(*memory_source(bytes, "m.gguf"), "m.gguf", visitor);
  EXPECT_EQ(visitor.found,
            (std::vector<std::pair<std::string, std::string>>{{"m.gguf!tokenizer.chat_template", "{{ x }}"},
                                                              {"m.gguf!tokenizer.chat_template.tool_use", "{{ y }}"}}));
  std::string cut = bytes.substr(0, 60);  // inside the first template's length, at 24 + 31 + 4 = 59
  try {
    name_gguf_templates(*memory_source(cut, "m.gguf"), "m.gguf", visitor);
    FAIL() << "named the templates of a truncated file";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), error_of(cut));
  }
}

}  // namespace
}  // namespace precdetect
