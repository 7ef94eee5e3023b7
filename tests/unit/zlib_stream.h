#pragma once
/// Test input compressed by zlib itself: `data` deflated at `level`, framed as `window_bits` says (zlib's
/// deflateInit2: 8..15 a zlib stream, -8..-15 raw deflate, +16 gzip).

#include <zlib.h>

#include <string>

namespace precdetect {

inline std::string zlib_stream(const std::string& data, int window_bits, int level = 6) {
  z_stream stream{};
  deflateInit2(&stream, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&stream, data.size()) + 32, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

}  // namespace precdetect
