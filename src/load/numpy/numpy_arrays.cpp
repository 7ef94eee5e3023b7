#include "precdetect/load/numpy/numpy_arrays.h"

#include <fmt/format.h>

#include <algorithm>

#include "precdetect/core/error.h"
#include "precdetect/core/inflate.h"
#include "precdetect/load/numpy/npy.h"
#include "precdetect/load/pickle/pickle_stream.h"
#include "precdetect/load/source/decoded_source.h"
#include "precdetect/load/zip/zip_archive.h"

namespace precdetect {
namespace {

/// An .npz member's array: where its data starts (in the member), and its dtype when precdetect reads it.
struct MemberArray {
  NpyHeader header;
  std::optional<DType> dtype;
};

MemberArray member_array(std::span<const std::byte> head, const std::filesystem::path& path, const ZipEntry& entry) {
  MemberArray array{.header = read_npy_header(head, fmt::format("{}!{}", path.string(), entry.name))};
  if (!array.header.holds_objects) array.dtype = npy_dtype(array.header);
  return array;
}

/// numpy.load's key for a member: its name without ".npy".
std::string array_name(const ZipEntry& entry) {
  return entry.name.ends_with(".npy") ? entry.name.substr(0, entry.name.size() - 4) : entry.name;
}

}  // namespace

FileFormat read_npy(Checkpoint& checkpoint, size_t file) {
  const ByteSource& source = *checkpoint.files[file];
  NpyHeader header = read_npy_header(npy_head(source, 0, source.size()), source.path());
  uint64_t data_size = source.size() - header.data_offset;
  if (header.holds_objects) refuse_pickle(source, source.view(header.data_offset, data_size), header.data_offset);
  std::optional<DType> dtype = npy_dtype(header);
  if (!dtype)
    fail(ErrorCode::kUnknownDtype, source.path(),
         fmt::format("a NumPy array of dtype `{}`, which precdetect does not read", header.descr));
  TensorRecord record =
      npy_tensor(header, *dtype, source.path().stem().string(), header.data_offset, data_size, source.path());
  record.file = file;
  checkpoint.tensors.push_back(std::move(record));
  return FileFormat::kNpy;
}

FileFormat read_npz(Checkpoint& checkpoint, size_t file, const std::vector<ZipEntry>& entries) {
  auto decoded = std::make_unique<DecodedSource>(std::move(checkpoint.files[file]));
  const std::filesystem::path& path = decoded->path();
  std::vector<std::string> not_read;
  for (const auto& [name, entry] : zip_directory(entries, path)) {
    if (entry.flags & 1) fail(ErrorCode::kInvalidZip, path, fmt::format("member `{}` is encrypted", name));
    if (entry.method != 0 && entry.method != 8)
      fail(ErrorCode::kCompressedEntry, path, fmt::format("member `{}`: compression method {}", name, entry.method));
    // A deflated member is inflated from its bytes held whole; a stored one is read by range, its head now and its
    // data when analyzed.
    std::span<const std::byte> raw;
    if (entry.method == 8) raw = decoded->view(entry.data_offset, entry.size);
    std::string head = entry.method == 8 ? inflate_head(raw, kMaxNpyHead, path, name) : std::string();
    MemberArray array = member_array(
        entry.method == 8 ? std::as_bytes(std::span(head)) : npy_head(*decoded, entry.data_offset, entry.size), path,
        entry);
    if (!array.dtype) {
      not_read.push_back(
          fmt::format("{} ({})", array_name(entry), array.header.holds_objects ? "objects" : array.header.descr));
      continue;
    }
    uint64_t data_size = entry.uncompressed - std::min(entry.uncompressed, array.header.data_offset);
    TensorRecord record = npy_tensor(array.header, *array.dtype, array_name(entry),
                                     entry.data_offset + array.header.data_offset, data_size, path);
    if (entry.method == 8 && data_size > 0) {
      uint64_t skip = array.header.data_offset;
      record.offset =
          decoded->add_region(data_size,
                              [raw, skip, path, member = name, crc = entry.crc32](std::span<std::byte> dest) {
                                inflate_into(raw, skip, dest, path, member, crc);
                              },
                              {.offset = entry.data_offset, .length = entry.size});
    }
    record.file = file;
    checkpoint.tensors.push_back(std::move(record));
  }
  warn_about(checkpoint.warnings, WarningCode::kDtypesNotRead, path.string(), std::move(not_read));
  checkpoint.files[file] = std::move(decoded);
  return FileFormat::kNpz;
}

namespace {

/// An object array's pickle, the one a .npy holds when numpy.load(allow_pickle=True) reads it.
void name_npy_pickles(const ByteSource& source, const std::string& where, PickleVisitor& visitor) {
  std::optional<NpyHeader> header = npy_header_or_why(npy_head(source, 0, source.size()), where, visitor);
  if (header && header->holds_objects)
    visitor.pickles(source.view(header->data_offset, source.size() - header->data_offset), where, header->data_offset,
                    1);
}

}  // namespace

std::unique_ptr<FormatFile> open_npy(const ByteSource& source) {
  if (!looks_like_npy(source.view(0, std::min<uint64_t>(source.size(), 8)))) return nullptr;
  return plain_format_file(source, FileFormat::kNpy, read_npy, name_npy_pickles);
}

std::unique_ptr<FormatFile> open_npz(const ByteSource& source) {
  if (!looks_like_zip(source) || source.path().extension() != ".npz") return nullptr;
  return zip_format_file(source, FileFormat::kNpz, read_npz);
}

}  // namespace precdetect
