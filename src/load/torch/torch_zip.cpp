#include <fmt/format.h>

#include "precdetect/core/error.h"
#include "precdetect/load/torch/torch_formats.h"
#include "precdetect/load/torch/torch_tensors.h"
#include "precdetect/load/zip/zip_archive.h"

namespace precdetect {
namespace {

using Entries = std::map<std::string, ZipEntry>;

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

/// The bytes of a stored (uncompressed) entry; torch never compresses, so anything else is not torch's.
std::span<const std::byte> stored_bytes(const ByteSource& source, const ZipEntry& entry) {
  if (entry.method != 0)
    fail(ErrorCode::kCompressedEntry, source.path(),
         fmt::format("entry `{}` is compressed (method {}); torch.save stores entries uncompressed", entry.name,
                     entry.method));
  return source.view(entry.data_offset, entry.size);
}

/// Runs one pickle of the archive and adds its tensors, whose storages are the records in `folder`.
void add_pickle_tensors(Checkpoint& checkpoint, size_t file, const Entries& entries, const std::string& prefix,
                        const ZipEntry& pickle_entry, const std::string& folder, const std::string& name_prefix,
                        bool big_endian) {
  const ByteSource& source = *checkpoint.files[file];
  auto result = pickle::run(stored_bytes(source, pickle_entry), source.path(), pickle_entry.data_offset);
  auto found = find_tensors(result, source.path());
  for (FoundTensor& tensor : found) tensor.name = name_prefix.empty() ? tensor.name : name_prefix + "." + tensor.name;
  auto locate = [&](const pickle::Storage& storage) {
    auto entry = entries.find(prefix + folder + storage.key);
    if (entry == entries.end())
      fail(ErrorCode::kMissingRecord, source.path(),
           fmt::format("storage record `{}{}` is missing", folder, storage.key));
    stored_bytes(source, entry->second);
    return StorageLocation{entry->second.data_offset, entry->second.size};
  };
  add_torch_tensors(checkpoint, found, locate, file, big_endian);
  add_pickle_findings(checkpoint, result, source.path());
}

}  // namespace

std::string read_torch_zip(Checkpoint& checkpoint, size_t file, const std::vector<ZipEntry>& directory) {
  const ByteSource& source = *checkpoint.files[file];
  Entries entries = zip_directory(directory, source.path());
  std::string prefix = archive_prefix(entries, source);
  auto find = [&](const std::string& name) {
    auto entry = entries.find(prefix + name);
    return entry == entries.end() ? nullptr : &entry->second;
  };
  const ZipEntry* data = find("data.pkl");
  if (data == nullptr)
    fail(ErrorCode::kMissingRecord, source.path(), "zip archive without data.pkl: not a torch.save file");
  const ZipEntry* byteorder = find("byteorder");  // written since torch 2.1; older files are little-endian
  bool big_endian =
      byteorder && std::string_view(reinterpret_cast<const char*>(stored_bytes(source, *byteorder).data()),
                                    byteorder->size) == "big";
  add_pickle_tensors(checkpoint, file, entries, prefix, *data, "data/", "", big_endian);
  const ZipEntry* constants = find("constants.pkl");  // present in TorchScript archives only
  if (constants == nullptr) return "pytorch-zip";
  add_pickle_tensors(checkpoint, file, entries, prefix, *constants, "constants/", "constants", big_endian);
  return "torchscript";
}

std::unique_ptr<FormatFile> open_torch_zip(const ByteSource& source) {
  return looks_like_zip(source) ? zip_format_file(source, FileFormat::kTorchZip, read_torch_zip) : nullptr;
}

}  // namespace precdetect
