#include "precdetect/core/inflate.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>

#include "precdetect/core/error.h"

namespace precdetect {

std::string inflate_entry(std::span<const std::byte> compressed, uint64_t expected, const std::filesystem::path& path,
                          std::string_view name) {
  constexpr uint64_t kStep = 1 << 20;  // output grows as the stream produces it, whatever size was declared
  z_stream stream{};
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK)
    fail(ErrorCode::kInvalidZip, path, fmt::format("entry `{}`: zlib could not start", name));
  std::string out;
  uint64_t in_at = 0;
  int status = Z_OK;
  while (status == Z_OK && out.size() <= expected) {
    if (stream.avail_in == 0 && in_at < compressed.size()) {
      uint64_t n = std::min<uint64_t>(kStep, compressed.size() - in_at);
      stream.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(compressed.data() + in_at));
      stream.avail_in = static_cast<uInt>(n);
      in_at += n;
    }
    if (stream.avail_out == 0) {  // one byte past `expected` is room enough to see a stream that runs long
      out.resize(std::min<uint64_t>(out.size() + kStep, expected + 1));
      stream.next_out = reinterpret_cast<Bytef*>(out.data() + stream.total_out);
      stream.avail_out = static_cast<uInt>(out.size() - stream.total_out);
    }
    uLong before_in = stream.total_in, before_out = stream.total_out;
    status = inflate(&stream, Z_NO_FLUSH);
    if (status == Z_OK && stream.total_in == before_in && stream.total_out == before_out) break;  // starved
  }
  uint64_t total = stream.total_out;
  inflateEnd(&stream);
  if (status != Z_STREAM_END)
    fail(ErrorCode::kInvalidZip, path, fmt::format("entry `{}`: damaged or truncated deflate stream", name));
  if (total != expected)
    fail(ErrorCode::kInvalidZip, path,
         fmt::format("entry `{}` inflates to {} bytes, not the {} declared", name, total, expected));
  out.resize(total);
  return out;
}

}  // namespace precdetect
