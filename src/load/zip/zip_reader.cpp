#include "precdetect/load/zip/zip_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "precdetect/core/byte_cursor.h"
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
// torch pads a member's local extra field so that its data lands on a 64-byte boundary.
constexpr uint64_t kLocalPadding = 64;

/// The archive, read where its records point: each read views only the bytes it names (a remote archive is
/// fetched by range, its central directory and the headers it points at, never whole), checked against the file's
/// size first.
class Archive {
 public:
  explicit Archive(const ByteSource& source) : source_(source) {}

  std::span<const std::byte> at(uint64_t offset, uint64_t length, std::string_view what) const {
    check(offset, length, what);
    return source_.view(offset, length);
  }
  /// Throws unless [offset, +length) lies within the file; views nothing.
  void check(uint64_t offset, uint64_t length, std::string_view what) const {
    auto end = checked_add(offset, length);
    if (!end || *end > source_.size())
      fail_at(offset, fmt::format("{} [{}, +{}) runs past the end ({} bytes)", what, offset, length, source_.size()));
  }
  [[noreturn]] void fail_at(uint64_t offset, std::string_view what) const {
    fail_at_offset(ErrorCode::kInvalidZip, source_.path(), "zip archive", offset, what);
  }

 private:
  const ByteSource& source_;
};

struct Directory {
  uint64_t entries = 0, offset = 0, size = 0;
};

/// The end-of-central-directory record sits in the last 22 + 65535 bytes (it may carry a comment): search backwards.
/// Returns its offset and its bytes, from one view of the archive's tail.
std::pair<uint64_t, std::span<const std::byte>> find_end_record(const Archive& zip, uint64_t size) {
  if (size < kEndSize) zip.fail_at(0, "file too small for a zip directory");
  uint64_t lowest = size > kEndSize + kMaxComment ? size - kEndSize - kMaxComment : 0;
  auto tail = zip.at(lowest, size - lowest, "the archive's tail");
  for (uint64_t at = size - kEndSize + 1; at-- > lowest;)
    if (read_le<uint32_t>(tail, at - lowest) == kEndOfDirectory) return {at, tail.subspan(at - lowest, kEndSize)};
  zip.fail_at(size, "no end-of-central-directory record");
}

Directory read_directory_location(const Archive& zip, uint64_t size) {
  auto [end, record] = find_end_record(zip, size);
  Directory dir{read_le<uint16_t>(record, 10), read_le<uint32_t>(record, 16), read_le<uint32_t>(record, 12)};
  bool zip64 = dir.entries == 0xFFFF || dir.offset == 0xFFFFFFFF || dir.size == 0xFFFFFFFF;
  if (end >= kLocatorSize && read_le<uint32_t>(zip.at(end - kLocatorSize, 4, "ZIP64 locator"), 0) == kZip64Locator)
    zip64 = true;
  if (!zip64) return dir;
  if (end < kLocatorSize) zip.fail_at(end, "ZIP64 locator missing");
  auto locator = zip.at(end - kLocatorSize, kLocatorSize, "ZIP64 locator");
  if (read_le<uint32_t>(locator, 0) != kZip64Locator) zip.fail_at(end - kLocatorSize, "ZIP64 locator missing");
  uint64_t record64_at = read_le<uint64_t>(locator, 8);
  auto record64 = zip.at(record64_at, kZip64EndSize, "ZIP64 end of central directory");
  if (read_le<uint32_t>(record64, 0) != kZip64End) zip.fail_at(record64_at, "bad ZIP64 end record signature");
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
uint64_t data_offset(const Archive& zip, uint64_t local, uint64_t size) {
  auto header = zip.at(local, kLocalSize, "local file header");
  if (read_le<uint32_t>(header, 0) != kLocalHeader) zip.fail_at(local, "bad local file header signature");
  uint64_t start = local + kLocalSize + read_le<uint16_t>(header, 26) + read_le<uint16_t>(header, 28);
  zip.check(start, size, "entry data");
  return start;
}

/// A central directory record: its entry (data_offset not yet resolved), and where its local header is.
struct CentralRecord {
  ZipEntry entry;
  uint64_t local = 0;
};

/// Central directory record `number` of `count`, read from `central` (positioned at it).
CentralRecord read_central_entry(ByteCursor& central, uint64_t number, uint64_t count) {
  central.mark();
  if (central.remaining() < kCentralSize || central.le<uint32_t>() != kCentralHeader)
    central.fail(fmt::format("central directory entry {} of {} is missing", number, count));
  auto fixed = central.bytes(kCentralSize - 4);  // the record's fields after its signature
  uint64_t name_length = read_le<uint16_t>(fixed, 24), extra_length = read_le<uint16_t>(fixed, 26);
  uint64_t comment_length = read_le<uint16_t>(fixed, 28);
  if (central.remaining() < name_length + extra_length + comment_length)
    central.fail("central directory entry runs past its end");
  ZipEntry entry{.name = std::string(central.text(name_length)),
                 .method = read_le<uint16_t>(fixed, 6),
                 .flags = read_le<uint16_t>(fixed, 4),
                 .crc32 = read_le<uint32_t>(fixed, 12),
                 // "version made by": its high byte 3 is Unix, whose mode the external attributes' high half holds
                 .unix_mode = read_le<uint16_t>(fixed, 0) >> 8 == 3 ? read_le<uint32_t>(fixed, 34) >> 16 : 0};
  uint64_t compressed = read_le<uint32_t>(fixed, 16), size = read_le<uint32_t>(fixed, 20);
  uint64_t local = read_le<uint32_t>(fixed, 38);
  apply_zip64_extra(central.bytes(extra_length), size, compressed, local);
  central.skip(comment_length);
  entry.size = compressed;
  entry.uncompressed = size;
  return {std::move(entry), local};
}

/// Where each record's local header lies, its name and a padded extra field included: what data_offset() views.
std::vector<ByteRange> local_headers(const std::vector<CentralRecord>& records) {
  std::vector<ByteRange> ranges;
  ranges.reserve(records.size());
  for (const CentralRecord& record : records)
    ranges.push_back({record.local, kLocalSize + record.entry.name.size() + kLocalPadding});
  return ranges;
}

}  // namespace

bool looks_like_zip(const ByteSource& source) {
  return source.size() >= 4 && read_le<uint32_t>(source.view(0, 4), 0) == kLocalHeader;
}

std::vector<ZipEntry> read_zip_entries(const ByteSource& source) {
  Archive zip(source);
  Directory dir = read_directory_location(zip, source.size());
  ByteCursor central(zip.at(dir.offset, dir.size, "central directory"), source.path(), ErrorCode::kInvalidZip,
                     "zip archive", dir.offset);
  std::vector<CentralRecord> records;
  // NOLINTNEXTLINE(performance-inefficient-vector-operation): a count the file claims, never reserved ahead
  for (uint64_t i = 0; i < dir.entries; ++i) records.push_back(read_central_entry(central, i + 1, dir.entries));
  // Every local header asked for at once: a remote archive's members would each cost a round trip.
  source.prefetch(local_headers(records));
  std::vector<ZipEntry> entries;
  entries.reserve(records.size());
  for (CentralRecord& record : records) {
    record.entry.data_offset = data_offset(zip, record.local, record.entry.size);
    entries.push_back(std::move(record.entry));
  }
  return entries;
}

std::map<std::string, ZipEntry> zip_directory(const std::vector<ZipEntry>& entries, const std::filesystem::path& path) {
  std::map<std::string, ZipEntry> directory;
  for (const ZipEntry& entry : entries) {
    const std::string& name = entry.name;
    if (!directory.emplace(name, entry).second)
      fail(ErrorCode::kInvalidZip, path,
           fmt::format("two entries named `{}`: readers disagree on which one they load", name));
  }
  return directory;
}

}  // namespace precdetect
