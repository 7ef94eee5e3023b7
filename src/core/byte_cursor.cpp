#include "precdetect/core/byte_cursor.h"

#include <fmt/format.h>

namespace precdetect {

void ByteCursor::fail_at(uint64_t file_offset, std::string_view what) const {
  if (format_.empty()) precdetect::fail(code_, path_, what);
  precdetect::fail(code_, path_, fmt::format("invalid {} at offset {}: {}", format_, file_offset, what));
}

void ByteCursor::past_the_end(uint64_t offset, uint64_t length, std::string_view what) const {
  fail_at(base_ + offset, fmt::format("{} [{}, +{}) runs past the end ({} bytes)", what, base_ + offset, length,
                                      base_ + bytes_.size()));
}

}  // namespace precdetect
