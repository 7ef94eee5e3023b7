#include "precdetect/load/zip/zip_archive.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <set>

#include "precdetect/core/error.h"
#include "precdetect/core/inflate.h"
#include "precdetect/load/archive_member.h"
#include "precdetect/load/member_contents.h"
#include "precdetect/load/numpy/npy.h"

namespace precdetect {
namespace {

constexpr uint64_t kMaxInflated = 1ull << 30;

/// The pickles of one archive's members, named to a visitor.
class MemberPickles {
 public:
  MemberPickles(const ByteSource& archive, const std::string& where, PickleVisitor& visitor)
      : archive_(archive), where_(where), visitor_(visitor) {}

  void name_all(const std::vector<ZipEntry>& entries) {
    std::set<std::string> names;
    bool torchscript = false;
    for (const ZipEntry& entry : entries) {
      if (!names.insert(entry.name).second)
        visitor_.unverified(where_,
                            fmt::format("two entries named `{}`: readers disagree on which one they load", entry.name));
      torchscript |= entry.name.ends_with("/constants.pkl") || entry.name.find("/code/") != std::string::npos;
      if (std::optional<std::string> escape = escape_of(entry))
        visitor_.tampering(FileTampering::kArchiveEscape, where_, std::move(*escape));
    }
    if (torchscript)
      visitor_.unverified(where_,
                          "a TorchScript archive: torch.jit.load compiles and runs its code/, which precdetect does "
                          "not judge");
    for (const ZipEntry& entry : entries) member(entry);
  }

 private:
  /// Why extracting `entry` (unzip, or any tool that keeps a member's path and links) writes outside its folder.
  std::optional<std::string> escape_of(const ZipEntry& entry) const {
    if (std::optional<std::string> escape = member_name_escape(entry.name)) return escape;
    if (!entry.is_symlink()) return std::nullopt;
    if (entry.method != 0) {  // a compressed link target is not inflated to be read: not vouched for
      visitor_.unverified(where_, fmt::format("symbolic link member `{}` whose target is compressed", entry.name));
      return std::nullopt;
    }
    auto target = archive_.view(entry.data_offset, entry.size);
    return link_member_escape(entry.name, {reinterpret_cast<const char*>(target.data()), target.size()}, false);
  }

  /// One member: a pickle, an array, a nested checkpoint or archive, or raw data (tensor records) that nothing
  /// unpickles.
  void member(const ZipEntry& entry) {
    std::string inside = fmt::format("{}!{}", where_, entry.name);
    bool array = entry.name.ends_with(".npy");
    bool storage = entry.name.find("/data/") != std::string::npos ||
                   entry.name.find("/constants/") != std::string::npos || entry.name.starts_with(".data/") ||
                   entry.name.find("/.data/") != std::string::npos;
    if (storage && !pickle_member_name(entry.name)) return;
    std::string inflated;
    std::span<const std::byte> bytes;
    try {
      // An array's header tells whether a pickle follows: numbers are not inflated to find that out.
      bytes = array && entry.method == 0 ? npy_head(archive_, entry.data_offset, entry.size)
                                         : member_bytes(entry, inflated, array ? kMaxNpyHead : kZipWholeMember);
    } catch (const Error& e) {  // a member a reader may extract (zipfile reads bzip2 and lzma too): not vouched for
      visitor_.unverified(inside, e.what());
      return;
    }
    uint64_t base = entry.method == 0 ? entry.data_offset : 0;  // offsets in a compressed member count from its start
    if (array) return array_member(entry, bytes, inside, base);
    name_member_contents(bytes, entry.name, where_, base, archive_, visitor_);
  }

  /// An .npy member, from its first bytes `head`: the rest is read only when it is a pickle.
  void array_member(const ZipEntry& entry, std::span<const std::byte> head, const std::string& where, uint64_t base) {
    std::optional<NpyHeader> header = npy_header_or_why(head, where, visitor_);
    if (!header || !header->holds_objects) return;
    std::string inflated;
    std::span<const std::byte> bytes;
    try {
      bytes = member_bytes(entry, inflated, kZipWholeMember);
    } catch (const Error& e) {
      return visitor_.unverified(where, e.what());
    }
    visitor_.pickles(bytes.subspan(header->data_offset), where, base + header->data_offset, 1);
  }

  /// A member's bytes, a deflated one's out of the examination's decompression budget.
  std::span<const std::byte> member_bytes(const ZipEntry& entry, std::string& inflated, uint64_t limit) {
    if (entry.method != 0 && std::min(entry.uncompressed, limit) > visitor_.decompression_left())
      fail(ErrorCode::kCompressedEntry, archive_.path(),
           fmt::format("`{}` inflates to {} bytes, past what is left of the {} one examination decompresses (a "
                       "compression bomb?)",
                       entry.name, entry.uncompressed, "budget"));
    std::span<const std::byte> bytes = zip_member_bytes(archive_, entry, inflated, limit);
    if (entry.method != 0) visitor_.decompressed(bytes.size());
    return bytes;
  }

  const ByteSource& archive_;
  const std::string& where_;
  PickleVisitor& visitor_;
};

class ZipFormatFile final : public FormatFile {
 public:
  ZipFormatFile(const ByteSource& source, FileFormat format, ReadZip read, NameMembers name_members)
      : source_(source), format_(format), read_(read), name_members_(name_members) {}
  FileFormat format() const override { return format_; }
  FileFormat read(Checkpoint& checkpoint, size_t file) const override { return read_(checkpoint, file, entries()); }
  void name_pickles(const std::string& where, PickleVisitor& visitor) const override {
    const std::vector<ZipEntry>* entries = nullptr;
    try {
      entries = &this->entries();
    } catch (const Error& e) {
      return visitor.unverified(where, e.what());
    }
    MemberPickles(source_, where, visitor).name_all(*entries);
    if (name_members_) name_members_(source_, *entries, where, visitor);
  }

 private:
  /// The central directory, read on first use; a damaged one throws its error again on every use.
  const std::vector<ZipEntry>& entries() const {
    if (!entries_ && !error_) {
      try {
        entries_ = read_zip_entries(source_);
      } catch (const Error&) {
        error_ = std::current_exception();
      }
    }
    if (error_) std::rethrow_exception(error_);
    return *entries_;
  }

  const ByteSource& source_;
  FileFormat format_;
  ReadZip read_;
  NameMembers name_members_;
  mutable std::optional<std::vector<ZipEntry>> entries_;
  mutable std::exception_ptr error_;
};

}  // namespace

std::span<const std::byte> zip_member_bytes(const ByteSource& archive, const ZipEntry& entry, std::string& inflated,
                                            uint64_t limit) {
  // An entry flagged encrypted is read as it is stored: a reader that ignores the flag loads those bytes (and
  // bytes truly encrypted are no pickle the machine can follow: unverified).
  if (entry.method == 0) return archive.view(entry.data_offset, std::min(entry.size, limit));
  std::span<const std::byte> raw = archive.view(entry.data_offset, entry.size);
  if (entry.method != 8)
    fail(ErrorCode::kCompressedEntry, archive.path(), fmt::format("compression method {}", entry.method));
  if (limit < entry.uncompressed) {
    inflated = inflate_head(raw, limit, archive.path(), entry.name);
  } else if (entry.uncompressed > kMaxInflated) {
    fail(ErrorCode::kCompressedEntry, archive.path(),
         fmt::format("inflates to {} bytes, more than a safety check reads", entry.uncompressed));
  } else {
    inflated = inflate_entry(raw, entry.uncompressed, archive.path(), entry.name);
  }
  return std::as_bytes(std::span(inflated));
}

std::unique_ptr<FormatFile> zip_format_file(const ByteSource& source, FileFormat format, ReadZip read,
                                            NameMembers name_members) {
  return std::make_unique<ZipFormatFile>(source, format, read, name_members);
}

}  // namespace precdetect
