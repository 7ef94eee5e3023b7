// Files compressed whole (issue 66): each compressor's own library writes the stream, load/compressed reads it back,
// bounded, and names a damaged one.
#include "precdetect/load/compressed/compressed.h"

#include <bzlib.h>
#include <gtest/gtest.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>

#include "precdetect/core/error.h"
#include "zlib_stream.h"

namespace precdetect {
namespace {

std::span<const std::byte> bytes_of(const std::string& text) { return std::as_bytes(std::span(text)); }

std::string bzip2_stream(const std::string& data) {
  std::string out(data.size() + data.size() / 100 + 700, '\0');
  auto length = static_cast<unsigned>(out.size());
  BZ2_bzBuffToBuffCompress(out.data(), &length, const_cast<char*>(data.data()), static_cast<unsigned>(data.size()), 9,
                           0, 0);
  out.resize(length);
  return out;
}

std::string xz_or_lzma_stream(const std::string& data, bool alone) {
  lzma_stream stream = LZMA_STREAM_INIT;
  if (alone) {
    lzma_options_lzma options;
    lzma_lzma_preset(&options, 6);
    lzma_alone_encoder(&stream, &options);
  } else {
    lzma_easy_encoder(&stream, 6, LZMA_CHECK_CRC64);
  }
  std::string out(data.size() + 1024, '\0');
  stream.next_in = reinterpret_cast<const uint8_t*>(data.data());
  stream.avail_in = data.size();
  stream.next_out = reinterpret_cast<uint8_t*>(out.data());
  stream.avail_out = out.size();
  lzma_code(&stream, LZMA_FINISH);
  out.resize(stream.total_out);
  lzma_end(&stream);
  return out;
}

std::string zstd_stream(const std::string& data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3));
  return out;
}

/// Decoding `stream` is refused as compressed_entry, with `message` in the error.
void expect_refused(const std::string& stream, Compression compression, uint64_t limit, const std::string& name,
                    const std::string& message) {
  try {
    decompress(bytes_of(stream), compression, limit, name);
    FAIL() << "decoded " << name;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCompressedEntry);
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

const std::string kData = std::string(100000, 'a') + "\x80\x04the end";

TEST(Compressed, EachCompressorsOwnStreamDecodesAndIsKnownByItsMagic) {
  struct Case {
    Compression compression;
    std::string stream;
  };
  std::vector<Case> cases = {
      {Compression::kGzip, zlib_stream(kData, 15 + 16)},    {Compression::kZlib, zlib_stream(kData, 15)},
      {Compression::kBzip2, bzip2_stream(kData)},           {Compression::kXz, xz_or_lzma_stream(kData, false)},
      {Compression::kLzma, xz_or_lzma_stream(kData, true)}, {Compression::kZstd, zstd_stream(kData)}};
  for (const Case& item : cases) {
    SCOPED_TRACE(std::string(compression_name(item.compression)));
    EXPECT_EQ(compression_of(bytes_of(item.stream)), item.compression);
    EXPECT_EQ(decompress(bytes_of(item.stream), item.compression, kMaxDecompressed, "x"), kData);
  }
  EXPECT_FALSE(compression_of(bytes_of("PK\x03\x04 a zip")));
  EXPECT_FALSE(compression_of(bytes_of("xy: a text whose first two bytes fail zlib's header check")));
}

TEST(Compressed, TextThatStartsLikeZlibIsNoCompressedFile) {
  // "x^" is zlib's header for its fastest level, and starts many a text: claimed only when the bytes decode.
  const std::string text = "x^2 + y^2 = r^2, a note beside the weights";
  EXPECT_EQ(compression_of(bytes_of(text)), Compression::kZlib);
  std::unique_ptr<ByteSource> note = memory_source(text, "note.txt");
  EXPECT_EQ(open_compressed(*note), nullptr);
  std::string stream = zlib_stream(kData, 15);
  std::unique_ptr<ByteSource> real = memory_source(stream, "state.z");
  ASSERT_NE(open_compressed(*real), nullptr);
  EXPECT_EQ(open_compressed(*real)->format(), FileFormat::kCompressed);
}

TEST(Compressed, ConcatenatedGzipMembersAreReadAsPythonReadsThem) {
  std::string two = zlib_stream("first ", 31) + zlib_stream("second", 31);
  EXPECT_EQ(decompress(bytes_of(two), Compression::kGzip, 1 << 20, "x"), "first second");
}

TEST(Compressed, PastTheLimitOrDamagedIsANamedError) {
  expect_refused(zlib_stream(kData, 31), Compression::kGzip, 1000, "bomb.gz",
                 "bomb.gz: decompresses to more than 1000 bytes");
  std::string cut = zlib_stream(kData, 15).substr(0, 40);
  EXPECT_THROW(decompress(bytes_of(cut), Compression::kZlib, kMaxDecompressed, "cut.z"), Error);
  std::string cut_zstd = zstd_stream(kData).substr(0, 30);
  EXPECT_THROW(decompress(bytes_of(cut_zstd), Compression::kZstd, kMaxDecompressed, "cut.zst"), Error);
}

TEST(Compressed, AnLzmaHeaderAskingForAHugeDictionaryIsANamedError) {
  // The lzma alone header's bytes 1-4 are the dictionary size the decoder allocates: 3 GiB asked in 13 bytes (what
  // fuzz.pickle_safety found) is refused before any is allocated, with the reason.
  std::string stream = xz_or_lzma_stream(kData, true);
  const uint32_t huge = 0xC0000000;
  std::memcpy(stream.data() + 1, &huge, sizeof huge);
  expect_refused(stream, Compression::kLzma, kMaxDecompressed, "state.lzma",
                 "state.lzma: an lzma stream whose dictionary needs more than 256 MiB");
}

}  // namespace
}  // namespace precdetect
