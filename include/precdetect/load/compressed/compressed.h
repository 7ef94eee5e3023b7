#pragma once
/// A file compressed whole: gzip, bzip2, xz, lzma (the legacy "alone" format), zlib or zstd. joblib.dump writes
/// these with `compress=('gzip'|'bz2'|'lzma'|'xz'|'zlib', n)` (joblib/compressor.py), pandas' to_pickle with
/// `compression=`, and a `.pkl.gz` or `.tar.gz` is one. No loader reads weights from them; joblib.load,
/// pandas.read_pickle and tar extract or unpickle what they hold, so the safety examination decodes them (within a
/// bound) and judges the bytes inside as a file of its own, in its format.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "precdetect/load/file_format.h"
#include "precdetect/load/source/byte_source.h"

namespace precdetect {

enum class Compression { kGzip, kBzip2, kXz, kLzma, kZlib, kZstd };

/// "gzip", "bzip2", "xz", "lzma", "zlib", "zstd": how a layer is named (`x.joblib!(gzip)`).
std::string_view compression_name(Compression compression);

/// The compression `head` (a file's first bytes, 16 are enough) starts with, by its magic number: gzip `1f 8b 08`,
/// bzip2 `BZh1`-`BZh9`, xz `fd 37 7a 58 5a 00`, lzma alone `5d 00 00` (the properties joblib's preset writes), zlib
/// `78` with a valid header check and no preset dictionary, zstd `28 b5 2f fd`; nullopt for anything else.
std::optional<Compression> compression_of(std::span<const std::byte> head);

/// Decodes the whole of `compressed` (file `path`), concatenated streams included, into at most `limit` bytes.
/// Throws Error(kCompressedEntry) naming the path for a damaged or truncated stream, and for one that decodes
/// past `limit` (a compression bomb, or more than a safety check reads).
std::string decompress(std::span<const std::byte> compressed, Compression compression, uint64_t limit,
                       const std::filesystem::path& path);

/// What a safety check decodes of one layer at most, as a deflated zip member (zip_archive.cpp).
inline constexpr uint64_t kMaxDecompressed = uint64_t{1} << 30;

/// The file opened as a compressed stream when compression_of claims its first bytes (a zlib header only when its
/// first bytes also decode), else nullptr. Reading it as weights is Error(kNotACheckpoint); its pickles are those
/// of the bytes it decodes to (within what the visitor's budget leaves, at most kMaxDecompressed), opened in their
/// own format under the name without the compression's extension (`x.pkl.gz` holds `x.pkl`, a pickle by its name)
/// and named `<where>!(gzip)`; bytes that decode badly or past the bound are unverified.
std::unique_ptr<FormatFile> open_compressed(const ByteSource& source);

}  // namespace precdetect
