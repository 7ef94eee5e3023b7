#pragma once
/// A bounds-checked reader over untrusted bytes: every read first checks that the bytes exist, and a failure throws
/// the format's own named error with the path and the offset of the record being read. Every parser reads
/// through one: the pickle machine, the zip directory, the tar members, the mapped file's views. A cursor reads
/// bytes held in memory, or a file it does not hold whole through a window that moves as it reads
/// (load/source/source_cursor.h): a remote GGUF's header, an ONNX model's messages around their tensors' bytes.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
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

/// Gives a windowed cursor's bytes [offset, offset + least) (relative to its start, inside its size), and as many
/// after them as are at hand without another read: the window the cursor reads on from.
using ByteWindow = std::function<std::span<const std::byte>(uint64_t offset, uint64_t least)>;

class ByteCursor {
 public:
  /// `bytes` start at offset `base` of `path`. Errors are `code`, worded "<path>: invalid <format> at offset N:
  /// <what>" (N: the last mark), or "<path>: <what>" when `format` is empty.
  ByteCursor(std::span<const std::byte> bytes, const std::filesystem::path& path, ErrorCode code,
             std::string_view format, uint64_t base = 0)
      : bytes_(bytes), size_(bytes.size()), path_(path), code_(code), format_(format), base_(base) {}
  /// `size` bytes read through `window`, nothing viewed until read; otherwise as above.
  ByteCursor(uint64_t size, ByteWindow window, const std::filesystem::path& path, ErrorCode code,
             std::string_view format, uint64_t base = 0)
      : window_(std::move(window)), size_(size), path_(path), code_(code), format_(format), base_(base) {}

  /// Sequential reads from the current position; each throws "truncated: N more bytes needed" when short.
  std::span<const std::byte> bytes(uint64_t n) {
    require(n);
    if (pos_ - window_begin_ + n > bytes_.size()) move_window(n);
    pos_ += n;
    return bytes_.subspan(pos_ - n - window_begin_, n);
  }
  std::string_view text(uint64_t n) {
    auto raw = bytes(n);
    return {reinterpret_cast<const char*>(raw.data()), raw.size()};
  }
  template <typename T>
  T le() {
    return read_le<T>(bytes(sizeof(T)), 0);
  }
  /// Moves past n bytes without viewing them (a tensor's between two records).
  void skip(uint64_t n) {
    require(n);
    pos_ += n;
  }
  /// The bytes from the current position to the end, not consumed.
  std::span<const std::byte> rest() const { return at(pos_, remaining(), "the rest"); }

  /// Random access: `length` bytes at `offset` (relative to the start of the bytes), or an error saying that
  /// `what` [offset, +length) runs past the end.
  std::span<const std::byte> at(uint64_t offset, uint64_t length, std::string_view what) const {
    auto end = checked_add(offset, length);
    if (!end || *end > size_) past_the_end(offset, length, what);
    if (offset >= window_begin_ && *end - window_begin_ <= bytes_.size())
      return bytes_.subspan(offset - window_begin_, length);
    return window_(offset, length).first(length);
  }

  /// Errors from now on name this offset: the start of the record being read.
  void mark() { mark_ = pos_; }
  /// Moves to `offset` (relative), which must lie within the bytes.
  void seek(uint64_t offset) {
    if (offset > size_) fail_at(base_ + offset, "offset past the end");
    pos_ = offset;
  }
  uint64_t position() const { return pos_; }        ///< relative to the start of the bytes
  uint64_t offset() const { return base_ + pos_; }  ///< in the file
  uint64_t remaining() const { return size_ - pos_; }
  bool done() const { return pos_ >= size_; }

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
  /// Views the next n bytes (a windowed cursor's, which require() found inside its size) and what follows them.
  void move_window(uint64_t n);

  ByteWindow window_;                 ///< empty when the cursor holds its bytes
  std::span<const std::byte> bytes_;  ///< all of them, or the window's from window_begin_
  uint64_t window_begin_ = 0, size_ = 0;
  const std::filesystem::path& path_;
  ErrorCode code_;
  std::string_view format_;
  uint64_t base_ = 0, pos_ = 0, mark_ = 0;
};

}  // namespace precdetect
