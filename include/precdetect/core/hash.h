#pragma once
/// A fixed, portable 64-bit hash (FNV-1a): the same value on every machine and run, for --shard and cache keys.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace precdetect {

inline uint64_t fnv1a(std::span<const std::byte> bytes) {
  uint64_t hash = 14695981039346656037ull;  // offset basis; the prime below
  for (std::byte b : bytes) hash = (hash ^ static_cast<uint64_t>(b)) * 1099511628211ull;
  return hash;
}

inline uint64_t fnv1a(std::string_view text) { return fnv1a(std::as_bytes(std::span(text.data(), text.size()))); }

}  // namespace precdetect
