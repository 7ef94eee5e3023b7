#include "precdetect/core/byte_cursor.h"

#include <fmt/format.h>

#include <algorithm>

namespace precdetect {

void fail_at_offset(ErrorCode code, const std::filesystem::path& path, std::string_view format, uint64_t offset,
                    std::string_view what) {
  if (format.empty()) fail(code, path, what);
  fail(code, path, fmt::format("invalid {} at offset {}: {}", format, offset, what));
}

void ByteCursor::past_the_end(uint64_t offset, uint64_t length, std::string_view what) const {
  fail_at(base_ + offset,
          fmt::format("{} [{}, +{}) runs past the end ({} bytes)", what, base_ + offset, length, base_ + size_));
}

void ByteCursor::move_window(uint64_t n) {
  std::span<const std::byte> window = window_(pos_, n);
  bytes_ = window.first(std::min<uint64_t>(window.size(), size_ - pos_));
  window_begin_ = pos_;
}

}  // namespace precdetect
