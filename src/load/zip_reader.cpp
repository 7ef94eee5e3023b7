#include "precdetect/load/zip_reader.h"

#include <fmt/format.h>

#include <algorithm>

#include "precdetect/core/bytes.h"
#include "precdetect/core/error.h"

namespace precdetect {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfDirectory = 0x06054b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint32_t kZip64End = 0x06064b50;
constexpr uint64_t kEndSize = 22, kLocatorSize = 20, kZip64EndSize = 56, kCentralSize = 46, kLocalSize = 30;
constexpr uint64_t kMaxComment = 0xFFFF;

[[noreturn]] void damaged(const ByteSource& source, uint64_t offset, std::string_view what) {
  fail(ErrorCode::kInvalidZip, source.path(), fmt::format("invalid zip archive at offset {}: {}", offset, what));
}

/// `length` bytes at `offset`, or a kInvalidZip error naming what was being read.
std::span<const std::byte> bytes_at(const ByteSource& source, uint64_t offset, uint64_t length, std::string_view what) {
  auto end = checked_add(offset, length);
  if (!end || *end > source.size()) damaged(source, offset, fmt::format("{} runs past the end of the file", what));
  return source.view(offset, length);
}

struct Directory {
  uint64_t entries = 0, offset = 0, size = 0;
};

/// The end-of-central-directory record sits in the last 22 + 65535 bytes (it may carry a comment): search backwards.
uint64_t find_end_record(const ByteSource& source) {
  if (source.size() < kEndSize) damaged(source, 0, "file too small for a zip directory");
  uint64_t lowest = source.size() > kEndSize + kMaxComment ? source.size() - kEndSize - kMaxComment : 0;
  auto tail = source.view(lowest, source.size() - lowest);
  for (uint64_t at = source.size() - kEndSize + 1; at-- > lowest;)
    if (read_le<uint32_t>(tail, at - lowest) == kEndOfDirectory) return at;
  damaged(source, source.size(), "no end-of-central-directory record");
}

Directory read_directory_location(const ByteSource& source) {
  uint64_t end = find_end_record(source);
  auto record = bytes_at(source, end, kEndSize, "end of central directory");
  Directory dir{read_le<uint16_t>(record, 10), read_le<uint32_t>(record, 16), read_le<uint32_t>(record, 12)};
  bool zip64 = dir.entries == 0xFFFF || dir.offset == 0xFFFFFFFF || dir.size == 0xFFFFFFFF;
  if (end >= kLocatorSize && read_le<uint32_t>(source.view(end - kLocatorSize, 4), 0) == kZip64Locator) zip64 = true;
  if (!zip64) return dir;
  if (end < kLocatorSize) damaged(source, end, "ZIP64 locator missing");
  auto locator = bytes_at(source, end - kLocatorSize, kLocatorSize, "ZIP64 locator");
  if (read_le<uint32_t>(locator, 0) != kZip64Locator) damaged(source, end - kLocatorSize, "ZIP64 locator missing");
  uint64_t record64_at = read_le<uint64_t>(locator, 8);
  auto record64 = bytes_at(source, record64_at, kZip64EndSize, "ZIP64 end of central directory");
  if (read_le<uint32_t>(record64, 0) != kZip64End) damaged(source, record64_at, "bad ZIP64 end record signature");
  return {read_le<uint64_t>(record64, 32), read_le<uint64_t>(record64, 48), read_le<uint64_t>(record64, 40)};
}

/// ZIP64 "extra field" 0x0001 holds the 64-bit values of whichever 32-bit fields read 0xFFFFFFFF, in order.
void apply_zip64_extra(std::span<const std::byte> extra, uint64_t& size, uint64_t& compressed, uint64_t& local) {
  for (size_t at = 0; at + 4 <= extra.size();) {
    uint16_t id = read_le<uint16_t>(extra, at), length = read_le<uint16_t>(extra, at + 2);
    size_t field = at + 4, field_end = std::min(extra.size(), field + length);
    if (id == 0x0001) {
      for (uint64_t* value : {&size, &compressed, &local}) {
        if (*value != 0xFFFFFFFF) continue;
        if (field + 8 > field_end) break;
        *value = read_le<uint64_t>(extra, field);
        field += 8;
      }
    }
    at = field_end;
  }
}

/// The data of an entry starts after its local header, whose name and extra lengths may differ from the
/// central directory's (torch pads the local extra field so data lands on 64-byte boundaries).
uint64_t data_offset(const ByteSource& source, uint64_t local, uint64_t size) {
  auto header = bytes_at(source, local, kLocalSize, "local file header");
  if (read_le<uint32_t>(header, 0) != kLocalHeader) damaged(source, local, "bad local file header signature");
  uint64_t start = local + kLocalSize + read_le<uint16_t>(header, 26) + read_le<uint16_t>(header, 28);
  bytes_at(source, start, size, "entry data");
  return start;
}

}  // namespace

bool looks_like_zip(const ByteSource& source) {
  return source.size() >= 4 && read_le<uint32_t>(source.view(0, 4), 0) == kLocalHeader;
}

std::map<std::string, ZipEntry> read_zip_directory(const ByteSource& source) {
  Directory dir = read_directory_location(source);
  auto central = bytes_at(source, dir.offset, dir.size, "central directory");
  std::map<std::string, ZipEntry> entries;
  uint64_t at = 0;
  for (uint64_t i = 0; i < dir.entries; ++i) {
    if (at + kCentralSize > central.size() || read_le<uint32_t>(central, at) != kCentralHeader)
      damaged(source, dir.offset + at, fmt::format("central directory entry {} of {} is missing", i + 1, dir.entries));
    uint64_t name_length = read_le<uint16_t>(central, at + 28), extra_length = read_le<uint16_t>(central, at + 30);
    uint64_t comment_length = read_le<uint16_t>(central, at + 32);
    uint64_t record_end = at + kCentralSize + name_length + extra_length + comment_length;
    if (record_end > central.size()) damaged(source, dir.offset + at, "central directory entry runs past its end");
    ZipEntry entry{.name = std::string(reinterpret_cast<const char*>(central.data() + at + kCentralSize), name_length),
                   .method = read_le<uint16_t>(central, at + 10)};
    uint64_t compressed = read_le<uint32_t>(central, at + 20), size = read_le<uint32_t>(central, at + 24);
    uint64_t local = read_le<uint32_t>(central, at + 42);
    apply_zip64_extra(central.subspan(at + kCentralSize + name_length, extra_length), size, compressed, local);
    entry.size = compressed;
    entry.data_offset = data_offset(source, local, compressed);
    entries[entry.name] = std::move(entry);
    at = record_end;
  }
  return entries;
}

}  // namespace precdetect
