#pragma once
/// A ByteCursor over bytes of a ByteSource that it reads piecewise, through view_at_least(): a parser walks a
/// file's structure without viewing the file whole. A mapped file gives its rest at the first read, so the walk
/// runs at a span's speed; a remote file gives what one fetch brought (remote_source.h reads ahead of a walk), so
/// a header of megabytes costs a few requests and the bytes between records (a tensor's) are never fetched.

#include <string_view>

#include "precdetect/core/byte_cursor.h"
#include "precdetect/load/source/byte_source.h"

namespace precdetect {

/// A cursor over bytes [offset, offset + size) of `source` (which must outlive it), its errors worded as
/// ByteCursor's naming `path` (which must outlive it) at offsets counted from `base`. Throws
/// Error(kOffsetPastEnd) when the range is not inside the source.
ByteCursor source_cursor(const ByteSource& source, uint64_t offset, uint64_t size, const std::filesystem::path& path,
                         ErrorCode code, std::string_view format, uint64_t base);

/// The cursor over bytes [offset, offset + size), its errors naming the source at offsets in it.
inline ByteCursor source_cursor(const ByteSource& source, uint64_t offset, uint64_t size, ErrorCode code,
                                std::string_view format) {
  return source_cursor(source, offset, size, source.path(), code, format, offset);
}

/// The cursor over all of `source`.
inline ByteCursor source_cursor(const ByteSource& source, ErrorCode code, std::string_view format) {
  return source_cursor(source, 0, source.size(), code, format);
}

}  // namespace precdetect
