// A zstd frame of DCP's zstd stream transform, inflated within its bound; frames made here by libzstd.
#include "precdetect/load/dcp/zstd_frame.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include "precdetect/core/error.h"

namespace precdetect {
namespace {

std::string compress(const std::string& bytes) {
  std::string frame(ZSTD_compressBound(bytes.size()), '\0');
  size_t size = ZSTD_compress(frame.data(), frame.size(), bytes.data(), bytes.size(), 3);
  EXPECT_FALSE(ZSTD_isError(size));
  frame.resize(size);
  return frame;
}

std::string inflate(const std::string& frame, uint64_t limit) {
  return inflate_zstd_frame({reinterpret_cast<const std::byte*>(frame.data()), frame.size()}, limit,
                            "ckpt/__0_0.distcp", "the chunk of `w`");
}

void expect_error(const std::string& frame, uint64_t limit, const std::string& detail) {
  try {
    inflate(frame, limit);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCompressedEntry) << e.what();
    EXPECT_NE(std::string(e.what()).find("ckpt/__0_0.distcp: the chunk of `w`: " + detail), std::string::npos)
        << e.what();
  }
}

TEST(ZstdFrame, InflatesItsFirstFrameWithinItsBound) {
  std::string bytes(300000, 'x');
  bytes += "the end";
  std::string frame = compress(bytes);
  EXPECT_EQ(inflate(frame, bytes.size()), bytes);
  EXPECT_EQ(inflate(frame + compress("another frame"), bytes.size()), bytes);  // as zstandard's stream reader
}

TEST(ZstdFrame, AFrameThatInflatesPastItsBoundOrIsDamagedIsNamed) {
  std::string frame = compress(std::string(300000, 'x'));
  expect_error(frame, 299999, "its zstd frame decompresses past the 299999 bytes its entry may hold");
  expect_error(frame.substr(0, frame.size() - 3), 300000, "a truncated zstd frame");
  expect_error("not a zstd frame", 100, "a damaged zstd frame");
  expect_error("", 100, "a truncated zstd frame");
}

}  // namespace
}  // namespace precdetect
