#pragma once
/// Checked primitives for parsing untrusted bytes: every size and offset from a file goes through these.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace precdetect {

/// a + b, or nullopt on uint64 overflow.
std::optional<uint64_t> checked_add(uint64_t a, uint64_t b);
/// a * b, or nullopt on uint64 overflow.
std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b);

/// Reads a little-endian T of `width` bytes (default: all of T) at `offset`; the caller has checked that the bytes
/// exist (ByteCursor does).
template <typename T>
T read_le(std::span<const std::byte> bytes, size_t offset, size_t width = sizeof(T)) {
  static_assert(std::is_unsigned_v<T>);
  T value = 0;
  for (size_t i = 0; i < width; ++i) value |= static_cast<T>(static_cast<T>(bytes[offset + i]) << (8 * i));
  return value;
}

}  // namespace precdetect
