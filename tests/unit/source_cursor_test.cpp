#include "precdetect/load/source/source_cursor.h"

#include <gtest/gtest.h>

#include "precdetect/core/error.h"
#include "test_util.h"

namespace precdetect {
namespace {

using testing::PiecewiseSource;

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// 0, 1, 2, ... as bytes: every read's value says where it was read.
std::string counting(size_t n) {
  std::string bytes(n, '\0');
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(i);
  return bytes;
}

TEST(SourceCursor, ReadsAcrossWindowsAsACursorOverTheWholeBytes) {
  std::string bytes = counting(1000);
  PiecewiseSource source(bytes, 7);
  ByteCursor windowed = source_cursor(source, 100, 800, ErrorCode::kInvalidGguf, "GGUF");
  ByteCursor whole(std::as_bytes(std::span(bytes)).subspan(100, 800), source.path(), ErrorCode::kInvalidGguf, "GGUF",
                   100);
  for (uint64_t n : {1, 2, 8, 3, 16, 5, 100, 4}) {
    EXPECT_EQ(windowed.offset(), whole.offset());
    auto a = windowed.bytes(n), b = whole.bytes(n);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << n;
    EXPECT_EQ(windowed.le<uint32_t>(), whole.le<uint32_t>());
  }
  EXPECT_EQ(windowed.at(700, 3, "a record")[2], std::byte(802 % 256));
  windowed.seek(790);
  EXPECT_EQ(windowed.rest().size(), 10u);
  EXPECT_EQ(windowed.remaining(), 10u);
  windowed.mark();
  whole.seek(790);
  whole.mark();
  // The same named error, at the same offset in the file.
  std::string error = error_of([&] { windowed.bytes(11); });
  EXPECT_EQ(error, error_of([&] { whole.bytes(11); }));
  EXPECT_NE(error.find("invalid GGUF at offset 890: truncated: 11 more bytes needed"), std::string::npos) << error;
  EXPECT_EQ(error_of([&] { windowed.at(795, 6, "a tensor"); }), error_of([&] { whole.at(795, 6, "a tensor"); }));
}

TEST(SourceCursor, ViewsOnlyWhatItReadsAndNeverWhatItSkips) {
  PiecewiseSource source(counting(1 << 20), 64);
  ByteCursor cursor = source_cursor(source, ErrorCode::kInvalidOnnx, "ONNX");
  cursor.bytes(10);
  cursor.skip(500000);  // a tensor's bytes between two records
  EXPECT_EQ(cursor.le<uint8_t>(), uint8_t(500010 % 256));
  EXPECT_FALSE(source.viewed(64, 500000 - 64));
  for (auto [offset, length] : source.views) EXPECT_LE(length, 64u);
  std::string error = error_of([&] { source_cursor(source, 1 << 19, 1 << 20, ErrorCode::kInvalidOnnx, "ONNX"); });
  EXPECT_NE(error.find("runs past the end"), std::string::npos) << error;
}

}  // namespace
}  // namespace precdetect
