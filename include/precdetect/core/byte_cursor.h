#pragma once
/// A bounds-checked reader over untrusted bytes: every read first checks that the bytes exist, and a failure throws
/// the format's own named error with the path and the offset of the record being read. Every parser reads
/// through one: the pickle machine, the zip directory, the tar members, the mapped file's views.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "precdetect/core/bytes.h"
#include "precdetect/core/error.h"

namespace precdetect {

/// Throws Error(code) worded "<path>: invalid <format> at offset N: <what>", or "<path>: <what>" when `format` is
/// empty: what a ByteCursor throws, for the checks a parser makes on values it read (a count, a type).
[[noreturn]] void fail_at_offset(ErrorCode code, const std::filesystem::path& path, std::string_view format,
                                 uint64_t offset, std::string_view what);

class ByteCursor {
 public:
  /// `bytes` start at offset `base` of `path`. Errors are `code`, worded "<path>: invalid <format> at offset N:
  /// <what>" (N: the last mark), or "<path>: <what>" when `format` is empty.
  ByteCursor(std::span<const std::byte> bytes, const std::filesystem::path& path, ErrorCode code,
             std::string_view format, uint64_t base = 0)
      : bytes_(bytes), path_(path), code_(code), format_(format), base_(base) {}

  /// Sequential reads from the current position; each throws "truncated: N more bytes needed" when short.
  std::span<const std::byte> bytes(uint64_t n) {
    require(n);
    pos_ += n;
    return bytes_.subspan(pos_ - n, n);
  }
  std::string_view text(uint64_t n) {
    auto raw = bytes(n);
    return {reinterpret_cast<const char*>(raw.data()), raw.size()};
  }
  template <typename T>
  T le() {
    return read_le<T>(bytes(sizeof(T)), 0);
  }
  void skip(uint64_t n) { bytes(n); }
  /// The bytes from the current position to the end, not consumed.
  std::span<const std::byte> rest() const { return bytes_.subspan(pos_); }

  /// Random access: `length` bytes at `offset` (relative to the start of the bytes), or an error saying that
  /// `what` [offset, +length) runs past the end.
  std::span<const std::byte> at(uint64_t offset, uint64_t length, std::string_view what) const {
    auto end = checked_add(offset, length);
    if (!end || *end > bytes_.size()) past_the_end(offset, length, what);
    return bytes_.subspan(offset, length);
  }

  /// Errors from now on name this offset: the start of the record being read.
  void mark() { mark_ = pos_; }
  /// Moves to `offset` (relative), which must lie within the bytes.
  void seek(uint64_t offset) {
    if (offset > bytes_.size()) fail_at(base_ + offset, "offset past the end");
    pos_ = offset;
  }
  uint64_t position() const { return pos_; }        ///< relative to the start of the bytes
  uint64_t offset() const { return base_ + pos_; }  ///< in the file
  uint64_t remaining() const { return bytes_.size() - pos_; }
  bool done() const { return pos_ >= bytes_.size(); }

  /// Throws the format's error at the last mark.
  [[noreturn]] void fail(std::string_view what) const { fail_at(base_ + mark_, what); }
  /// Throws the format's error at `file_offset`.
  [[noreturn]] void fail_at(uint64_t file_offset, std::string_view what) const {
    fail_at_offset(code_, path_, format_, file_offset, what);
  }
  [[noreturn]] void past_the_end(uint64_t offset, uint64_t length, std::string_view what) const;

 private:
  void require(uint64_t n) const {
    if (n > remaining()) fail("truncated: " + std::to_string(n) + " more bytes needed");
  }

  std::span<const std::byte> bytes_;
  const std::filesystem::path& path_;
  ErrorCode code_;
  std::string_view format_;
  uint64_t base_ = 0, pos_ = 0, mark_ = 0;
};

}  // namespace precdetect
