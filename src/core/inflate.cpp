#include "precdetect/core/inflate.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <array>

#include "precdetect/core/error.h"

namespace precdetect {
namespace {

// Deflate makes at most 258 bytes of 2 bits (1032 to 1): a member declaring more than that of its compressed
// size is lying, and its declared size is never allocated.
constexpr uint64_t kMaxRatio = 1032;
constexpr uint64_t kStep = 1 << 30;  // zlib counts in 32 bits: input and output are fed in parts

struct Inflated {
  uint64_t written = 0;
  bool ended = false;   ///< the stream reached its end
  bool longer = false;  ///< it goes on past a full `dest` (only looked for when asked)
  uint32_t crc32 = 0;   ///< of all bytes inflated, skipped ones included
};

/// Inflates, dropping the first `skip` bytes, into `dest` until the stream ends or `dest` is full; with
/// `probe_end`, then asks a byte more of a stream that has not ended, to tell whether it ends exactly there.
Inflated inflate_until_full(std::span<const std::byte> compressed, uint64_t skip, std::span<std::byte> dest,
                            bool probe_end, const std::filesystem::path& path, std::string_view name) {
  z_stream stream{};
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK)
    fail(ErrorCode::kInvalidZip, path, fmt::format("entry `{}`: zlib could not start", name));
  std::array<std::byte, 1 << 16> scratch{};  // where skipped bytes, and the probe's byte, go
  uint64_t in_at = 0, out_at = 0, skipped = 0;
  uLong crc = ::crc32(0, nullptr, 0);
  int status = Z_OK;
  while (status == Z_OK) {
    bool skipping = skipped < skip, probing = !skipping && out_at == dest.size();
    if (probing && !probe_end) break;
    if (stream.avail_in == 0 && in_at < compressed.size()) {
      uint64_t n = std::min(kStep, compressed.size() - in_at);
      stream.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(compressed.data() + in_at));
      stream.avail_in = static_cast<uInt>(n);
      in_at += n;
    }
    uint64_t room = skipping  ? std::min<uint64_t>(scratch.size(), skip - skipped)
                    : probing ? 1
                              : std::min(kStep, dest.size() - out_at);
    stream.next_out = reinterpret_cast<Bytef*>(skipping || probing ? scratch.data() : dest.data() + out_at);
    stream.avail_out = static_cast<uInt>(room);
    uLong before_in = stream.total_in;
    status = inflate(&stream, Z_NO_FLUSH);
    uint64_t made = room - stream.avail_out;
    if (probing && made > 0) return inflateEnd(&stream), Inflated{.written = out_at, .longer = true};
    crc = ::crc32(crc, stream.next_out - made, static_cast<uInt>(made));
    (skipping ? skipped : out_at) += made;
    if (status == Z_BUF_ERROR || (status == Z_OK && made == 0 && stream.total_in == before_in)) break;  // starved
  }
  inflateEnd(&stream);
  if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR)
    fail(ErrorCode::kInvalidZip, path, fmt::format("entry `{}`: damaged deflate stream", name));
  return {.written = skipped < skip ? 0 : out_at, .ended = status == Z_STREAM_END, .crc32 = static_cast<uint32_t>(crc)};
}

void check_ratio(uint64_t compressed, uint64_t declared, const std::filesystem::path& path, std::string_view name) {
  if (declared / kMaxRatio > compressed + 1)
    fail(ErrorCode::kInvalidZip, path,
         fmt::format("entry `{}` declares {} bytes from {} compressed: more than deflate can make", name, declared,
                     compressed));
}

}  // namespace

void inflate_into(std::span<const std::byte> compressed, uint64_t skip, std::span<std::byte> dest,
                  const std::filesystem::path& path, std::string_view name, std::optional<uint32_t> crc32) {
  check_ratio(compressed.size(), skip + dest.size(), path, name);
  Inflated inflated = inflate_until_full(compressed, skip, dest, /*probe_end=*/true, path, name);
  if (inflated.longer)
    fail(ErrorCode::kInvalidZip, path,
         fmt::format("entry `{}` inflates to more than the {} bytes declared", name, skip + dest.size()));
  if (!inflated.ended || inflated.written != dest.size())
    fail(ErrorCode::kInvalidZip, path,
         fmt::format("entry `{}`: damaged or truncated deflate stream (short of the {} bytes declared)", name,
                     skip + dest.size()));
  if (crc32 && inflated.crc32 != *crc32)
    fail(ErrorCode::kInvalidZip, path,
         fmt::format("entry `{}`: CRC-32 {:08x} of the inflated bytes, not the {:08x} recorded: the data is damaged",
                     name, inflated.crc32, *crc32));
}

std::string inflate_entry(std::span<const std::byte> compressed, uint64_t expected, const std::filesystem::path& path,
                          std::string_view name) {
  check_ratio(compressed.size(), expected, path, name);
  std::string out(expected, '\0');
  inflate_into(compressed, 0, std::as_writable_bytes(std::span(out)), path, name);
  return out;
}

std::string inflate_head(std::span<const std::byte> compressed, uint64_t length, const std::filesystem::path& path,
                         std::string_view name) {
  std::string out(std::min(length, (compressed.size() + 1) * kMaxRatio), '\0');
  out.resize(inflate_until_full(compressed, 0, std::as_writable_bytes(std::span(out)), false, path, name).written);
  return out;
}

}  // namespace precdetect
