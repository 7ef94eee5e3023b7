#include "precdetect/load/dcp/zstd_frame.h"

#include <fmt/format.h>
#include <zstd.h>

#include <algorithm>
#include <memory>
#include <new>

#include "precdetect/core/error.h"

namespace precdetect {

std::string inflate_zstd_frame(std::span<const std::byte> frame, uint64_t limit, const std::filesystem::path& path,
                               std::string_view what) {
  std::unique_ptr<ZSTD_DStream, decltype(&ZSTD_freeDStream)> stream(ZSTD_createDStream(), ZSTD_freeDStream);
  if (!stream) throw std::bad_alloc();
  ZSTD_inBuffer in{frame.data(), frame.size(), 0};
  std::string out;
  // The output grows as the frame delivers it, one block at a time, and one byte past the limit is an error: a
  // frame's declared content size (often absent in a stream) is not trusted either.
  const size_t step = ZSTD_DStreamOutSize();
  for (;;) {
    size_t done = out.size();
    uint64_t room = limit + 1 - done;
    out.resize(done + static_cast<size_t>(std::min<uint64_t>(step, room)));
    ZSTD_outBuffer buffer{out.data() + done, out.size() - done, 0};
    size_t left = ZSTD_decompressStream(stream.get(), &buffer, &in);
    out.resize(done + buffer.pos);
    if (ZSTD_isError(left))
      fail(ErrorCode::kCompressedEntry, path,
           fmt::format("{}: a damaged zstd frame ({})", what, ZSTD_getErrorName(left)));
    if (out.size() > limit)
      fail(ErrorCode::kCompressedEntry, path,
           fmt::format("{}: its zstd frame decompresses past the {} bytes its entry may hold", what, limit));
    if (left == 0) return out;  // the frame's end
    if (in.pos == in.size && buffer.pos < buffer.size)
      fail(ErrorCode::kCompressedEntry, path, fmt::format("{}: a truncated zstd frame", what));
  }
}

}  // namespace precdetect
