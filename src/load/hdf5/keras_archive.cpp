#include "precdetect/load/hdf5/keras_archive.h"

#include <fmt/format.h>

#include <map>
#include <string>
#include <vector>

#include "precdetect/core/error.h"
#include "precdetect/load/hdf5/hdf5.h"
#include "precdetect/load/zip/zip_archive.h"

namespace precdetect {
namespace {

constexpr std::string_view kConfig = "config.json";
constexpr std::string_view kWeights = "model.weights.h5";

FileFormat read_keras(Checkpoint& checkpoint, size_t file, const std::vector<ZipEntry>& entries) {
  const std::filesystem::path path = checkpoint.files[file]->path();
  std::map<std::string, ZipEntry> members = zip_directory(entries, path);
  auto weights = members.find(std::string(kWeights));
  if (weights == members.end())
    fail(ErrorCode::kNoWeights, path,
         fmt::format("a Keras archive without {}{}", kWeights,
                     members.contains("model.weights.npz") ? " (its weights are model.weights.npz, not read)" : ""));
  const ZipEntry& entry = weights->second;
  if (entry.flags & 1) fail(ErrorCode::kInvalidZip, path, fmt::format("member `{}` is encrypted", kWeights));
  // The HDF5 file is read in place, its datasets straight from the mapping: keras stores the member
  // (saving_lib's zipfile.ZipFile(..., "w")); inflating a whole weights file first would hold it in memory.
  if (entry.method != 0)
    fail(ErrorCode::kCompressedEntry, path,
         fmt::format("member `{}` is compressed (method {}); keras stores it: store it again (zip -0)", kWeights,
                     entry.method));
  read_hdf5_range(checkpoint, file, {.offset = entry.data_offset, .size = entry.size});
  return FileFormat::kKeras;
}

/// Every `config.json` entry, named as a Keras config: keras reads the last of two (zipfile keeps the last name),
/// and two entries of one name are unverified already.
void name_keras_configs(const ByteSource& archive, const std::vector<ZipEntry>& entries, const std::string& where,
                        PickleVisitor& visitor) {
  bool found = false;
  for (const ZipEntry& entry : entries) {
    if (entry.name != kConfig) continue;
    found = true;
    std::string inside = fmt::format("{}!{}", where, entry.name), inflated;
    std::span<const std::byte> bytes;
    try {
      bytes = zip_member_bytes(archive, entry, inflated);
    } catch (const Error& e) {
      visitor.unverified(inside, e.what());
      continue;
    }
    visitor.keras_config({reinterpret_cast<const char*>(bytes.data()), bytes.size()}, inside);
  }
  if (!found) visitor.unverified(where, "a Keras archive without config.json: no model config to judge");
  // The weights file keras opens with h5py: the files its objects reach, as a .h5 file's (a compressed one is
  // read by no one here: the scan names it).
  for (const ZipEntry& entry : entries)
    if (entry.name == kWeights && entry.method == 0)
      name_hdf5_safety(archive.path(), {.offset = entry.data_offset, .size = entry.size}, archive.size(),
                       fmt::format("{}!{}", where, entry.name), visitor);
}

}  // namespace

std::unique_ptr<FormatFile> open_keras(const ByteSource& source) {
  if (!looks_like_zip(source) || source.path().extension() != ".keras") return nullptr;
  return zip_format_file(source, FileFormat::kKeras, read_keras, name_keras_configs);
}

}  // namespace precdetect
