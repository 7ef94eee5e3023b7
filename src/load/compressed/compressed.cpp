#include "precdetect/load/compressed/compressed.h"

#include <bzlib.h>
#include <fmt/format.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>

#include "precdetect/core/error.h"
#include "precdetect/core/format.h"

namespace precdetect {
namespace fs = std::filesystem;
namespace {

constexpr size_t kChunk = size_t{1} << 16;

/// Appends decoded output to `out` a chunk at a time, refusing to grow it past `limit`.
class Output {
 public:
  Output(std::string& out, uint64_t limit, const fs::path& path) : out_(out), limit_(limit), path_(path) {}
  /// Room for the next chunk: where the decoder writes, and how much it may.
  std::pair<char*, size_t> room() {
    if (out_.size() >= limit_)
      fail(ErrorCode::kCompressedEntry, path_,
           fmt::format("decompresses to more than {} bytes: more than a safety check decodes (a compression bomb?)",
                       limit_));
    size_t at = out_.size();
    size_t grow = static_cast<size_t>(std::min<uint64_t>(kChunk, limit_ - at));
    out_.resize(at + grow);
    return {out_.data() + at, grow};
  }
  /// Keeps `used` of the last room's bytes.
  void keep(size_t given, size_t left) { out_.resize(out_.size() - given + (given - left)); }

 private:
  std::string& out_;
  uint64_t limit_;
  const fs::path& path_;
};

/// A decoder's stream, ended by its library however the decode leaves it (a bound's error thrown mid-stream too).
template <typename Stream>
using Ended = std::unique_ptr<Stream, void (*)(Stream*)>;

[[noreturn]] void damaged(const fs::path& path, std::string_view what, std::string_view why) {
  fail(ErrorCode::kCompressedEntry, path, fmt::format("a damaged {} stream: {}", what, why));
}

/// gzip (concatenated members, as Python's gzip reads them) and zlib, through zlib's inflate.
void inflate_all(std::span<const std::byte> in, bool gzip, std::string& out, uint64_t limit, const fs::path& path) {
  Output output(out, limit, path);
  size_t consumed = 0;
  while (consumed < in.size()) {
    z_stream stream{};
    if (inflateInit2(&stream, gzip ? 15 + 16 : 15) != Z_OK) damaged(path, "zlib", "cannot start inflate");
    Ended<z_stream> ended(&stream, [](z_stream* done) { inflateEnd(done); });
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data() + consumed));
    stream.avail_in = static_cast<uInt>(std::min<size_t>(in.size() - consumed, UINT32_MAX));
    int status = Z_OK;
    while (status == Z_OK) {
      auto [at, room] = output.room();
      stream.next_out = reinterpret_cast<Bytef*>(at);
      stream.avail_out = static_cast<uInt>(room);
      status = inflate(&stream, Z_NO_FLUSH);
      output.keep(room, stream.avail_out);
      if (status == Z_BUF_ERROR && stream.avail_in == 0) status = Z_DATA_ERROR;  // truncated
    }
    std::string why = stream.msg ? stream.msg : "truncated";
    consumed += stream.total_in;
    if (status != Z_STREAM_END) damaged(path, gzip ? "gzip" : "zlib", why);
    // Another gzip member may follow; anything after a zlib stream (or a gzip's padding) is not decoded.
    if (!gzip || in.size() - consumed < 2 || in[consumed] != std::byte{0x1f} || in[consumed + 1] != std::byte{0x8b})
      return;
  }
}

void bunzip_all(std::span<const std::byte> in, std::string& out, uint64_t limit, const fs::path& path) {
  Output output(out, limit, path);
  size_t consumed = 0;
  while (consumed + 4 <= in.size() && std::memcmp(in.data() + consumed, "BZh", 3) == 0) {
    bz_stream stream{};
    if (BZ2_bzDecompressInit(&stream, 0, 0) != BZ_OK) damaged(path, "bzip2", "cannot start");
    Ended<bz_stream> ended(&stream, [](bz_stream* done) { BZ2_bzDecompressEnd(done); });
    stream.next_in = reinterpret_cast<char*>(const_cast<std::byte*>(in.data() + consumed));
    stream.avail_in = static_cast<unsigned>(std::min<size_t>(in.size() - consumed, UINT32_MAX));
    unsigned start = stream.avail_in;
    int status = BZ_OK;
    while (status == BZ_OK) {
      auto [at, room] = output.room();
      stream.next_out = at;
      stream.avail_out = static_cast<unsigned>(room);
      status = BZ2_bzDecompress(&stream);
      output.keep(room, stream.avail_out);
      if (status == BZ_OK && stream.avail_in == 0 && stream.avail_out != 0) status = BZ_UNEXPECTED_EOF;
    }
    consumed += start - stream.avail_in;
    if (status != BZ_STREAM_END) damaged(path, "bzip2", fmt::format("error {}", status));
  }
}

/// The most memory liblzma may take to decode one file: its dictionary is what the file's header asks for (an lzma
/// alone header may ask for 4 GiB in 13 bytes), and the largest xz's presets write (-9, -9e) needs 65 MiB.
constexpr uint64_t kLzmaDecoderMemory = uint64_t{256} << 20;

/// xz (concatenated streams) and lzma alone, through liblzma's decoders.
void unxz_all(std::span<const std::byte> in, bool alone, std::string& out, uint64_t limit, const fs::path& path) {
  Output output(out, limit, path);
  lzma_stream stream = LZMA_STREAM_INIT;
  lzma_ret started = alone ? lzma_alone_decoder(&stream, kLzmaDecoderMemory)
                           : lzma_stream_decoder(&stream, kLzmaDecoderMemory, LZMA_CONCATENATED);
  if (started != LZMA_OK) damaged(path, alone ? "lzma" : "xz", "cannot start");
  Ended<lzma_stream> ended(&stream, lzma_end);
  stream.next_in = reinterpret_cast<const uint8_t*>(in.data());
  stream.avail_in = in.size();
  lzma_ret status = LZMA_OK;
  while (status == LZMA_OK) {
    auto [at, room] = output.room();
    stream.next_out = reinterpret_cast<uint8_t*>(at);
    stream.avail_out = room;
    status = lzma_code(&stream, stream.avail_in == 0 ? LZMA_FINISH : LZMA_RUN);
    output.keep(room, stream.avail_out);
  }
  if (status == LZMA_MEMLIMIT_ERROR)
    fail(ErrorCode::kCompressedEntry, path,
         fmt::format("an {} stream whose dictionary needs more than {} MiB to decode", alone ? "lzma" : "xz",
                     kLzmaDecoderMemory >> 20));
  if (status != LZMA_STREAM_END)
    damaged(path, alone ? "lzma" : "xz", fmt::format("error {}", static_cast<int>(status)));
}

void unzstd_all(std::span<const std::byte> in, std::string& out, uint64_t limit, const fs::path& path) {
  Output output(out, limit, path);
  std::unique_ptr<ZSTD_DStream, size_t (*)(ZSTD_DStream*)> stream(ZSTD_createDStream(), ZSTD_freeDStream);
  if (!stream) damaged(path, "zstd", "cannot start");
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  while (true) {
    auto [at, room] = output.room();
    ZSTD_outBuffer put{at, room, 0};
    size_t hint = ZSTD_decompressStream(stream.get(), &put, &input);
    output.keep(room, room - put.pos);
    if (ZSTD_isError(hint)) damaged(path, "zstd", ZSTD_getErrorName(hint));
    if (hint == 0 && input.pos == input.size) return;  // the last frame ended with the input
    if (input.pos == input.size && put.pos < room) damaged(path, "zstd", "truncated");
  }
}

/// The name the decoded bytes go by: the file's, without the compression's own extension.
fs::path inner_name(const fs::path& path) {
  std::span<const std::string_view> extensions = format_info(FileFormat::kCompressed).extensions;
  std::string extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (std::find(extensions.begin(), extensions.end(), extension) != extensions.end()) return path.stem();
  if (extension == ".tgz") return path.stem().string() + ".tar";
  return path.filename();
}

class CompressedFile final : public FormatFile {
 public:
  CompressedFile(const ByteSource& source, Compression compression) : source_(source), compression_(compression) {}
  FileFormat format() const override { return FileFormat::kCompressed; }

  FileFormat read(Checkpoint&, size_t) const override {
    fail(ErrorCode::kNotACheckpoint, source_.path(),
         fmt::format("a {} stream, no checkpoint of weights (joblib, pandas and tar decode such files; what it holds "
                     "is judged for safety)",
                     compression_name(compression_)));
  }

  void name_pickles(const std::string& where, PickleVisitor& visitor) const override {
    std::string inside = fmt::format("{}!({})", where, compression_name(compression_));
    std::string decoded;
    try {
      uint64_t limit = std::min(kMaxDecompressed, visitor.decompression_left());
      decoded = decompress(source_.view(0, source_.size()), compression_, limit, source_.path());
    } catch (const Error& e) {
      return visitor.unverified(inside, e.what());
    }
    visitor.decompressed(decoded.size());
    std::unique_ptr<ByteSource> inner =
        span_source(std::as_bytes(std::span(decoded)), source_.path().parent_path() / inner_name(source_.path()));
    if (std::unique_ptr<FormatFile> file = open_format(*inner)) visitor.nested(*file, inside);
  }

 private:
  const ByteSource& source_;
  Compression compression_;
};

bool starts_with(std::span<const std::byte> head, std::string_view magic) {
  return head.size() >= magic.size() && std::memcmp(head.data(), magic.data(), magic.size()) == 0;
}

}  // namespace

std::string_view compression_name(Compression compression) {
  switch (compression) {
    case Compression::kGzip:
      return "gzip";
    case Compression::kBzip2:
      return "bzip2";
    case Compression::kXz:
      return "xz";
    case Compression::kLzma:
      return "lzma";
    case Compression::kZlib:
      return "zlib";
    case Compression::kZstd:
      return "zstd";
  }
  return "gzip";
}

std::optional<Compression> compression_of(std::span<const std::byte> head) {
  using namespace std::string_view_literals;
  if (starts_with(head, "\x1f\x8b\x08"sv)) return Compression::kGzip;
  if (starts_with(head, "BZh"sv) && head.size() >= 4 && head[3] >= std::byte{'1'} && head[3] <= std::byte{'9'})
    return Compression::kBzip2;
  if (starts_with(head, "\xfd\x37\x7a\x58\x5a\x00"sv)) return Compression::kXz;
  if (starts_with(head, "\x5d\x00\x00"sv)) return Compression::kLzma;
  if (starts_with(head, "\x28\xb5\x2f\xfd"sv)) return Compression::kZstd;
  if (head.size() >= 2 && head[0] == std::byte{0x78}) {
    auto flags = static_cast<unsigned>(head[1]);
    if ((0x78u * 256 + flags) % 31 == 0 && (flags & 0x20) == 0) return Compression::kZlib;
  }
  return std::nullopt;
}

std::string decompress(std::span<const std::byte> compressed, Compression compression, uint64_t limit,
                       const fs::path& path) {
  std::string out;
  switch (compression) {
    case Compression::kGzip:
    case Compression::kZlib:
      inflate_all(compressed, compression == Compression::kGzip, out, limit, path);
      break;
    case Compression::kBzip2:
      bunzip_all(compressed, out, limit, path);
      break;
    case Compression::kXz:
    case Compression::kLzma:
      unxz_all(compressed, compression == Compression::kLzma, out, limit, path);
      break;
    case Compression::kZstd:
      unzstd_all(compressed, out, limit, path);
      break;
  }
  return out;
}

namespace {

/// Whether `source` decodes as a zlib stream as far as its first 64 KiB go: two bytes are a weak sign (a text may
/// start "x^", zlib's header for its fast levels, which joblib's zlib files start with too), and fixed Huffman
/// codes decode much text for a while, so the head must decode without error, and to the stream's end when it is
/// all of the file.
bool decodes_as_zlib(const ByteSource& source) {
  constexpr uint64_t kHead = uint64_t{1} << 16;
  z_stream stream{};
  if (inflateInit(&stream) != Z_OK) return false;
  auto in = source.view(0, std::min(source.size(), kHead));
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
  stream.avail_in = static_cast<uInt>(in.size());
  std::array<Bytef, kChunk> scratch{};
  int status = Z_OK;
  while (status == Z_OK && stream.avail_in > 0 && stream.total_out < (uint64_t{1} << 24)) {
    stream.next_out = scratch.data();
    stream.avail_out = scratch.size();
    status = inflate(&stream, Z_NO_FLUSH);
  }
  inflateEnd(&stream);
  if (status == Z_STREAM_END) return true;
  return status == Z_OK && source.size() > kHead;  // a long stream, good as far as its head goes
}

}  // namespace

std::unique_ptr<FormatFile> open_compressed(const ByteSource& source) {
  std::optional<Compression> compression = compression_of(source.view(0, std::min<uint64_t>(source.size(), 16)));
  if (!compression || (*compression == Compression::kZlib && !decodes_as_zlib(source))) return nullptr;
  return std::make_unique<CompressedFile>(source, *compression);
}

}  // namespace precdetect
