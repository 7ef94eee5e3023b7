#pragma once
/// Raw deflate (zip method 8) through zlib, bounded: np.savez_compressed's arrays and a zip's pickles.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace precdetect {

/// Inflates `compressed` (entry `name` of `path`), drops its first `skip` bytes (an array's header) and writes
/// the rest into `dest`, which the stream must fill exactly; with `crc32`, the inflated bytes must have that CRC
/// (a garbled stream can inflate to the right length). Throws Error(kInvalidZip) naming the path and entry for a
/// damaged stream, a size other than skip + dest's or a CRC mismatch, never writing past `dest`; also when that
/// size is more than deflate can make of the compressed bytes (a size that lies).
void inflate_into(std::span<const std::byte> compressed, uint64_t skip, std::span<std::byte> dest,
                  const std::filesystem::path& path, std::string_view name,
                  std::optional<uint32_t> crc32 = std::nullopt);

/// The whole of `compressed`, which must inflate to `expected` bytes (as inflate_into).
std::string inflate_entry(std::span<const std::byte> compressed, uint64_t expected, const std::filesystem::path& path,
                          std::string_view name);

/// The first `length` bytes `compressed` inflates to (fewer when it ends sooner): a member's header, read before
/// deciding whether to inflate the rest. Throws like inflate_into for a damaged stream.
std::string inflate_head(std::span<const std::byte> compressed, uint64_t length, const std::filesystem::path& path,
                         std::string_view name);

}  // namespace precdetect
