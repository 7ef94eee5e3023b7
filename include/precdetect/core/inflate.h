#pragma once
/// Raw deflate (zip method 8) through zlib, bounded: for the compressed members a safety check must read
/// (np.savez_compressed's arrays, a zip's pickles).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace precdetect {

/// Inflates `compressed` (entry `name` of `path`), which must come to exactly `expected` bytes. Throws
/// Error(kInvalidZip) naming the path and entry for a damaged stream or a size other than declared, before
/// writing more than `expected` bytes.
std::string inflate_entry(std::span<const std::byte> compressed, uint64_t expected, const std::filesystem::path& path,
                          std::string_view name);

}  // namespace precdetect
