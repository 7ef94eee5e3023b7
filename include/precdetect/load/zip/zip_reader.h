#pragma once
/// The zip container of torch.save (torch >= 1.6) and TorchScript: central directory, ZIP64, stored entries.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "precdetect/load/source/byte_source.h"

namespace precdetect {

struct ZipEntry {
  std::string name;
  uint16_t method = 0;        ///< 0 = stored, 8 = deflated; anything else is another compression
  uint16_t flags = 0;         ///< general-purpose bits (bit 0: encrypted), which torch's reader ignores
  uint32_t crc32 = 0;         ///< of the uncompressed bytes: checked where they are inflated (torch ignores it)
  uint64_t size = 0;          ///< bytes of the entry's data (compressed size for a compressed entry)
  uint64_t uncompressed = 0;  ///< bytes once decompressed (= size for a stored entry)
  uint64_t data_offset = 0;   ///< absolute offset of the data, from the entry's local header
  /// Unix mode bits (the high half of the external attributes, where the zip was made on Unix), else 0.
  uint32_t unix_mode = 0;
  bool is_symlink() const { return (unix_mode & 0170000) == 0120000; }
};

/// True when the source starts with a local file header ("PK\x03\x04"), as torch checks.
bool looks_like_zip(const ByteSource& source);

/// Reads the end-of-central-directory record (ZIP64 when present) and every central entry, and resolves each
/// entry's data offset through its local header: every entry in directory order, duplicates included (what a
/// safety check must look at). Every offset and size is checked against the file before use. Throws
/// Error(kInvalidZip) naming the file and the offset of the damage.
std::vector<ZipEntry> read_zip_entries(const ByteSource& source);

/// `entries` by name, as a reader loads them. Throws Error(kInvalidZip) naming `path` for two entries of one name
/// (readers disagree on which one they load).
std::map<std::string, ZipEntry> zip_directory(const std::vector<ZipEntry>& entries, const std::filesystem::path& path);

}  // namespace precdetect
