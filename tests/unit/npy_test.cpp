// The .npy header's contract (numpy/lib/format.py's layout), on headers built here as np.save writes them: the
// fields read, where the data starts, and the exact error for each header that is damaged or lies about its array.
// Files numpy itself wrote are read end to end in tests/e2e/test_formats.py (.npz) and test_safety.py (.npy).
#include "precdetect/load/numpy/npy.h"

#include <gtest/gtest.h>

#include "precdetect/core/error.h"
#include "test_util.h"

namespace precdetect {
namespace {

using testing::raw_bytes;

std::span<const std::byte> bytes_of(const std::string& text) { return std::as_bytes(std::span(text)); }

/// A version 1.0 .npy head as np.save writes it: magic, version, the uint16 header length, then `dict` padded with
/// spaces and a newline so that the data starts at a multiple of 64.
std::string npy_v1(const std::string& dict) {
  size_t padded = (10 + dict.size() + 1 + 63) / 64 * 64 - 10;
  std::string header = dict + std::string(padded - dict.size() - 1, ' ') + "\n";
  return std::string("\x93NUMPY\x01\x00", 8) + raw_bytes(std::vector<uint16_t>{static_cast<uint16_t>(padded)}) + header;
}

/// Version 2.0 or 3.0: a uint32 header length, which may lie about the bytes that follow.
std::string npy_v2(uint32_t length, const std::string& header, char major = '\x02') {
  return std::string("\x93NUMPY", 6) + major + '\0' + raw_bytes(std::vector<uint32_t>{length}) + header;
}

std::string dict(const std::string& descr, const std::string& fortran, const std::string& shape) {
  return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

/// The message read_npy_header throws for `bytes`; every one of them is kInvalidNumpy.
std::string error_of(const std::string& bytes) {
  try {
    read_npy_header(bytes_of(bytes), "w.npy");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidNumpy) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "read without an error";
  return "";
}

TEST(NpyHeader, ReadsWhatNpSaveWrites) {
  std::string head = npy_v1(dict("'<f4'", "False", "(2, 3)"));
  ASSERT_EQ(head.size(), 128u);  // 10 + 59 + 1 bytes, padded to a multiple of 64
  NpyHeader header = read_npy_header(bytes_of(head), "w.npy");
  EXPECT_EQ(header.descr, "<f4");
  EXPECT_FALSE(header.fortran_order);
  EXPECT_EQ(header.shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(header.data_offset, 128u);
  EXPECT_FALSE(header.holds_objects);
  EXPECT_EQ(npy_dtype(header), DType::F32);
  // A scalar's shape is (), a vector's (n,); big-endian and Fortran order are kept for the tensor's layout.
  header = read_npy_header(bytes_of(npy_v1(dict("'>f2'", "True", "()"))), "w.npy");
  EXPECT_EQ(header.shape, std::vector<uint64_t>{});
  EXPECT_TRUE(header.fortran_order);
  EXPECT_EQ(read_npy_header(bytes_of(npy_v1(dict("'|u1'", "False", "(7,)"))), "w.npy").shape, std::vector<uint64_t>{7});
  // Version 2's uint32 length: the data starts after it.
  std::string v2 = dict("'<i8'", "False", "(4,)") + "\n";
  EXPECT_EQ(read_npy_header(bytes_of(npy_v2(v2.size(), v2)), "w.npy").data_offset, 12 + v2.size());
}

TEST(NpyHeader, ObjectsAndStructuredDtypesNamingOneMeanAPickleFollows) {
  EXPECT_TRUE(read_npy_header(bytes_of(npy_v1(dict("'|O'", "False", "(2,)"))), "w.npy").holds_objects);
  NpyHeader structured =
      read_npy_header(bytes_of(npy_v1(dict("[('a', '<f4'), ('b', '|O')]", "False", "(2,)"))), "w.npy");
  EXPECT_EQ(structured.descr, "[('a', '<f4'), ('b', '|O')]");
  EXPECT_TRUE(structured.holds_objects);
  EXPECT_EQ(npy_dtype(structured), std::nullopt);
  // ml_dtypes' bfloat16 is saved as raw void: no pickle, and no dtype precdetect reads.
  NpyHeader raw = read_npy_header(bytes_of(npy_v1(dict("'<V2'", "False", "(2,)"))), "w.npy");
  EXPECT_FALSE(raw.holds_objects);
  EXPECT_EQ(npy_dtype(raw), std::nullopt);
}

TEST(NpyHeader, ADamagedPreambleIsNamedWhereItIs) {
  EXPECT_EQ(error_of("\x93NUMPZ\x01\x00"), "w.npy: invalid npy at offset 0: no \\x93NUMPY magic");
  EXPECT_EQ(error_of(npy_v2(0, "", '\x04')), "w.npy: invalid npy at offset 6: unknown format version 4");
  EXPECT_EQ(error_of(npy_v2(0, "", '\x00')), "w.npy: invalid npy at offset 6: unknown format version 0");
  EXPECT_EQ(error_of(std::string("\x93NUMPY\x01", 7)),
            "w.npy: invalid npy at offset 6: truncated: 1 more bytes needed");
  // A length no header needs, refused before its bytes are looked for; one the file does not hold.
  EXPECT_EQ(error_of(npy_v2((1 << 20) + 1, "")), "w.npy: invalid npy at offset 6: header of 1048577 bytes");
  EXPECT_EQ(error_of(npy_v2(100, "{'descr': ")), "w.npy: invalid npy at offset 6: truncated: 100 more bytes needed");
}

TEST(NpyHeader, ADictWithoutItsFieldsIsRefused) {
  EXPECT_EQ(error_of(npy_v1("{'fortran_order': False, 'shape': (2,), }")),
            "w.npy: invalid npy at offset 6: header without a 'descr'");
  EXPECT_EQ(error_of(npy_v1("{'descr': '<f4', 'shape': (2,), }")),
            "w.npy: invalid npy at offset 6: header without a True/False 'fortran_order'");
  EXPECT_EQ(error_of(npy_v1(dict("'<f4'", "1", "(2,)"))),
            "w.npy: invalid npy at offset 6: header without a True/False 'fortran_order'");
  EXPECT_EQ(error_of(npy_v1("{'descr': '<f4', 'fortran_order': False, }")), "w.npy: shape `` is not a tuple");
  EXPECT_EQ(error_of(npy_v1(dict("'<f4'", "False", "[2, 3]"))), "w.npy: shape `[2, 3]` is not a tuple");
  EXPECT_EQ(error_of(npy_v1(dict("'<f4'", "False", "(-1,)"))), "w.npy: shape `(-1,)` holds `-1`, not a size");
  EXPECT_EQ(error_of(npy_v1(dict("'<f4'", "False", "(99999999999999999999,)"))),
            "w.npy: shape `(99999999999999999999,)` holds `99999999999999999999`, not a size");
  std::string many = "(" + std::string(65 * 2, ' ');
  for (size_t i = 0; i < 65; ++i) many.replace(1 + 2 * i, 2, "1,");
  many += ")";
  EXPECT_EQ(error_of(npy_v1(dict("'<f4'", "False", many))), "w.npy: shape `" + many + "` has more than 64 dimensions");
}

TEST(NpyHeader, TheHeadIsTheHeaderAloneAndAsMuchAsADamagedOneHas) {
  std::string data = raw_bytes(std::vector<float>{1, 2});
  std::string header = npy_v1(dict("'<f4'", "False", "(2,)"));
  std::string file = header + data;
  auto source = memory_source(file, "w.npy");
  EXPECT_EQ(npy_head(*source, 0, file.size()).size(), header.size());  // never the data
  EXPECT_EQ(npy_head(*source, 0, 40).size(), 40u);                     // a file cut inside its header: what there is
  // A version 2 header whose length is past the limit: only the preamble, for read_npy_header to refuse.
  std::string lying = npy_v2(UINT32_MAX, std::string(32, ' '));
  auto lied = memory_source(lying, "w.npy");
  std::span<const std::byte> head = npy_head(*lied, 0, lying.size());
  EXPECT_EQ(head.size(), 12u);
  try {
    read_npy_header(head, "w.npy");
    FAIL() << "read a header of 4 GiB";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "w.npy: invalid npy at offset 6: header of 4294967295 bytes");
  }
  EXPECT_EQ(npy_head(*memory_source("\x93NU", "w.npy"), 0, 3).size(), 3u);
}

TEST(NpyTensor, TheArrayFillsWhatFollowsItsHeaderExactly) {
  NpyHeader header = read_npy_header(bytes_of(npy_v1(dict("'<f4'", "False", "(2, 3)"))), "w.npy");
  TensorRecord record = npy_tensor(header, DType::F32, "w", 64, 24, "a.npz");
  EXPECT_EQ(record.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(record.nbytes, 24u);
  EXPECT_EQ(record.offset, 64u);
  EXPECT_TRUE(record.stride.empty());
  auto message = [&](const NpyHeader& h, uint64_t available) {
    try {
      npy_tensor(h, DType::F32, "w", 64, available, "a.npz");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidNumpy);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(header, 20),
            "a.npz: array `w`: shape 2x3 of <f4 needs 24 bytes but 20 follow its header (truncated?)");
  EXPECT_EQ(message(header, 28), "a.npz: array `w`: shape 2x3 of <f4 needs 24 bytes but 28 follow its header");
  NpyHeader huge = header;
  huge.shape = {uint64_t{1} << 32, uint64_t{1} << 32};
  EXPECT_EQ(message(huge, 24), "a.npz: array `w`: element count overflows");
  huge.shape = {uint64_t{1} << 62};
  EXPECT_EQ(message(huge, 24), "a.npz: array `w`: byte size overflows");
  // Fortran order: column-major strides, the first index moving fastest.
  header.fortran_order = true;
  EXPECT_EQ(npy_tensor(header, DType::F32, "w", 64, 24, "a.npz").stride, (std::vector<int64_t>{1, 2}));
}

}  // namespace
}  // namespace precdetect
