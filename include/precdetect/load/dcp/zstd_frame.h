#pragma once
/// A zstd frame, as DCP's zstd stream transform (torch.distributed.checkpoint._extension.ZStandard, descriptor
/// `stream.zstd/1`) writes each entry of a `.distcp` file: decompressed by libzstd, within a bound.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace precdetect {

/// The bytes of the first zstd frame of `frame` (torch reads the entry through zstandard's stream reader, which
/// stops at the end of the first frame). Throws Error kCompressedEntry, naming `path` and `what`: a frame that
/// would decompress past `limit` bytes (untrusted: it is never inflated beyond), a damaged or truncated frame.
std::string inflate_zstd_frame(std::span<const std::byte> frame, uint64_t limit, const std::filesystem::path& path,
                               std::string_view what);

}  // namespace precdetect
