#pragma once
/// The zip container of torch.save (torch >= 1.6) and TorchScript: central directory, ZIP64, stored entries.

#include <cstdint>
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
};

/// True when the source starts with a local file header ("PK\x03\x04"), as torch checks.
bool looks_like_zip(const ByteSource& source);

/// Reads the end-of-central-directory record (ZIP64 when present) and every central entry, and resolves each
/// entry's data offset through its local header. Every offset and size is checked against the file before use.
/// Throws Error(kInvalidZip) naming the file and the offset of the damage, or two entries of one name (readers
/// disagree on which one they load).
std::map<std::string, ZipEntry> read_zip_directory(const ByteSource& source);

/// Every central directory entry in directory order, duplicates included: what a safety check must look at.
std::vector<ZipEntry> read_zip_entries(const ByteSource& source);

}  // namespace precdetect
