#include "precdetect/load/source/source_cursor.h"

#include "precdetect/core/bytes.h"

namespace precdetect {

ByteCursor source_cursor(const ByteSource& source, uint64_t offset, uint64_t size, const std::filesystem::path& path,
                         ErrorCode code, std::string_view format, uint64_t base) {
  auto end = checked_add(offset, size);
  if (!end || *end > source.size()) source.view(offset, size);  // throws the source's own error
  return {size,   [&source, offset](uint64_t at, uint64_t least) { return source.view_at_least(offset + at, least); },
          path,   code,
          format, base};
}

}  // namespace precdetect
