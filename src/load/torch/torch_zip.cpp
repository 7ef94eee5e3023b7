#include <fmt/format.h>

#include <algorithm>

#include "precdetect/core/error.h"
#include "precdetect/core/inflate.h"
#include "precdetect/load/source/decoded_source.h"
#include "precdetect/load/torch/torch_formats.h"
#include "precdetect/load/torch/torch_tensors.h"
#include "precdetect/load/zip/zip_archive.h"

namespace precdetect {
namespace {

using Entries = std::map<std::string, ZipEntry>;

constexpr uint16_t kStored = 0, kDeflated = 8;
constexpr uint64_t kMaxInflatedPickle = 1ull << 30;  // the safety examination's bound on a whole pickle member

/// torch names every entry "<archive>/...", after the file stem; readers take the first entry's folder.
std::string archive_prefix(const Entries& entries, const ByteSource& source) {
  if (entries.empty()) fail(ErrorCode::kInvalidZip, source.path(), "empty zip archive");
  const std::string& first = entries.begin()->first;
  std::string prefix = first.substr(0, first.find('/') + 1);
  for (const auto& [name, entry] : entries)
    if (prefix.empty() || !name.starts_with(prefix))
      fail(ErrorCode::kInvalidZip, source.path(), fmt::format("entry `{}` is outside the archive folder", name));
  return prefix;
}

/// A torch zip's members as torch.load's reader (miniz) gives them: stored ones in place, and deflated ones (a
/// checkpoint re-zipped with compression, which torch.load reads) inflated within the inflate limits: pickles
/// whole, storages as regions of a DecodedSource, inflated when analyzed. Any other method is refused.
class TorchZipMembers {
 public:
  TorchZipMembers(Checkpoint& checkpoint, size_t file, const std::vector<ZipEntry>& directory)
      : entries_(zip_directory(directory, checkpoint.files[file]->path())) {
    bool deflated = std::any_of(entries_.begin(), entries_.end(),
                                [](const auto& named) { return named.second.method == kDeflated; });
    if (deflated) {  // storages become regions past the file's own bytes; the file's bytes stay where they are
      auto decoded = std::make_unique<DecodedSource>(std::move(checkpoint.files[file]));
      regions_ = decoded.get();
      checkpoint.files[file] = std::move(decoded);
    }
    source_ = checkpoint.files[file].get();
    prefix_ = archive_prefix(entries_, *source_);
  }

  const ByteSource& source() const { return *source_; }

  /// The entry `name` of the archive folder, or nullptr.
  const ZipEntry* find(const std::string& name) const {
    auto entry = entries_.find(prefix_ + name);
    return entry == entries_.end() ? nullptr : &entry->second;
  }

  /// A pickle's or a small member's bytes: in place, or inflated into `inflated`.
  std::span<const std::byte> bytes(const ZipEntry& entry, std::string& inflated) const {
    std::span<const std::byte> raw = in_file(entry);
    if (entry.method == kStored) return raw;
    if (entry.uncompressed > kMaxInflatedPickle)
      fail(ErrorCode::kCompressedEntry, source_->path(),
           fmt::format("entry `{}` inflates to {} bytes, more than precdetect inflates for a pickle", entry.name,
                       entry.uncompressed));
    inflated = inflate_entry(raw, entry.uncompressed, source_->path(), entry.name);
    return std::as_bytes(std::span(inflated));
  }

  /// Where a storage record's bytes lie in the checkpoint's file: in place, or a region inflated when viewed
  /// (one per record, however many tensors view it). Nothing is read here: a remote file's storages are fetched
  /// when analyzed, never to be located (read_zip_entries checked that each lies within the file).
  StorageLocation storage(const ZipEntry& entry) {
    check_method(entry);
    if (entry.method == kStored) return {entry.data_offset, entry.size};
    auto [region, fresh] = region_offsets_.try_emplace(entry.name, 0);
    if (fresh)
      region->second = regions_->add_region(entry.uncompressed,
                                            [source = source_, entry](std::span<std::byte> dest) {
                                              inflate_into(source->view(entry.data_offset, entry.size), 0, dest,
                                                           source->path(), entry.name, entry.crc32);
                                            },
                                            {.offset = entry.data_offset, .length = entry.size});
    return {region->second, entry.uncompressed};
  }

  /// The offset a pickle's messages count from: its place in the file, or 0 (in the member) when it was inflated.
  static uint64_t pickle_base(const ZipEntry& entry) { return entry.method == kStored ? entry.data_offset : 0; }

 private:
  void check_method(const ZipEntry& entry) const {
    if (entry.method != kStored && entry.method != kDeflated)
      fail(ErrorCode::kCompressedEntry, source_->path(),
           fmt::format("entry `{}` is compressed with method {}; torch.load reads stored and deflated entries only",
                       entry.name, entry.method));
  }

  std::span<const std::byte> in_file(const ZipEntry& entry) const {
    check_method(entry);
    return source_->view(entry.data_offset, entry.size);
  }

  Entries entries_;
  const ByteSource* source_ = nullptr;
  DecodedSource* regions_ = nullptr;  ///< the file, when a member is deflated
  std::string prefix_;
  std::map<std::string, uint64_t> region_offsets_;
};

/// Runs one pickle of the archive and adds its tensors, whose storages are the records in `folder`.
void add_pickle_tensors(Checkpoint& checkpoint, size_t file, TorchZipMembers& members, const ZipEntry& pickle_entry,
                        const std::string& folder, const std::string& name_prefix, bool big_endian) {
  const ByteSource& source = members.source();
  std::string inflated;
  auto result =
      pickle::run(members.bytes(pickle_entry, inflated), source.path(), TorchZipMembers::pickle_base(pickle_entry));
  auto found = find_tensors(result, source.path());
  for (FoundTensor& tensor : found) tensor.name = name_prefix.empty() ? tensor.name : name_prefix + "." + tensor.name;
  auto locate = [&](const pickle::Storage& storage) {
    const ZipEntry* entry = members.find(folder + storage.key);
    if (entry == nullptr)
      fail(ErrorCode::kMissingRecord, source.path(),
           fmt::format("storage record `{}{}` is missing", folder, storage.key));
    return members.storage(*entry);
  };
  add_torch_tensors(checkpoint, found, locate, file, big_endian);
  add_pickle_findings(checkpoint, result, source.path());
}

}  // namespace

FileFormat read_torch_zip(Checkpoint& checkpoint, size_t file, const std::vector<ZipEntry>& directory) {
  TorchZipMembers members(checkpoint, file, directory);
  const ZipEntry* data = members.find("data.pkl");
  if (data == nullptr)
    fail(ErrorCode::kMissingRecord, members.source().path(), "zip archive without data.pkl: not a torch.save file");
  const ZipEntry* byteorder = members.find("byteorder");  // written since torch 2.1; older files are little-endian
  std::string inflated;
  std::span<const std::byte> order = byteorder ? members.bytes(*byteorder, inflated) : std::span<const std::byte>();
  bool big_endian = std::string_view(reinterpret_cast<const char*>(order.data()), order.size()) == "big";
  add_pickle_tensors(checkpoint, file, members, *data, "data/", "", big_endian);
  const ZipEntry* constants = members.find("constants.pkl");  // present in TorchScript archives only
  if (constants == nullptr) return FileFormat::kTorchZip;
  add_pickle_tensors(checkpoint, file, members, *constants, "constants/", "constants", big_endian);
  return FileFormat::kTorchScript;
}

std::unique_ptr<FormatFile> open_torch_zip(const ByteSource& source) {
  return looks_like_zip(source) ? zip_format_file(source, FileFormat::kTorchZip, read_torch_zip) : nullptr;
}

}  // namespace precdetect
