#include "precdetect/load/dcp/dcp.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>

#include "precdetect/core/bytes.h"
#include "precdetect/core/error.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/dcp/dcp_metadata.h"
#include "precdetect/load/dcp/zstd_frame.h"
#include "precdetect/load/safetensors/safetensors.h"
#include "precdetect/load/torch/torch_formats.h"
#include "precdetect/load/torch/torch_tensors.h"

namespace precdetect {
namespace {

constexpr std::string_view kMetadataName = ".metadata";
// dcp.save(..., use_collectives=False) has each rank write its own `__<rank>.metadata` (filesystem.py).
constexpr std::string_view kRankPrefix = "__";
// Keys a DCP state dict's FQNs may start with before the model's or optimizer's own: torch's recipe saves
// {"app": AppState(model, optimizer)} (docs/using.md).
constexpr std::string_view kWrappers[] = {"app"};
// What a zstd frame of an archive may inflate to: the chunk's elements at the widest dtype torch.save stores
// (complex128), plus the archive's own records (its pickle, version, byteorder, serialization id, each aligned to
// 64 bytes); an entry that is no tensor declares no size, and is inflated up to what the zip reader inflates.
constexpr uint64_t kWidestElement = 16, kArchiveRecords = 64 * 1024, kMaxObjectArchive = 1ull << 30;
// torch.save names a tensor saved on its own this way (torch_tensors.h); a chunk takes its tensor's FQN.
constexpr std::string_view kRootName = "(root)";

/// The rank of a rank-local metadata file's name (`__3.metadata`), else nullopt.
std::optional<size_t> rank_of(const std::string& name) {
  if (!name.starts_with(kRankPrefix) || !name.ends_with(kMetadataName)) return std::nullopt;
  std::string digits = name.substr(kRankPrefix.size(), name.size() - kRankPrefix.size() - kMetadataName.size());
  if (digits.empty() || digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoul(digits);
}

/// The rank-local metadata files of the folder that holds `metadata`, in rank order: those of ranks 0 to N-1,
/// each there (dcp.load on rank r reads `__r.metadata`; joined, they are the whole checkpoint).
std::vector<std::filesystem::path> rank_files(const std::filesystem::path& metadata) {
  std::map<size_t, std::filesystem::path> ranks;
  std::filesystem::path folder = metadata.parent_path();
  std::error_code error;
  for (std::filesystem::directory_iterator entry(folder.empty() ? "." : folder, error), end; !error && entry != end;
       entry.increment(error))
    if (std::optional<size_t> rank = rank_of(entry->path().filename().string()); rank && entry->is_regular_file())
      ranks[*rank] = folder / entry->path().filename();
  if (error) fail(ErrorCode::kIo, folder, fmt::format("listing its ranks' metadata: {}", error.message()));
  std::vector<std::filesystem::path> files;
  std::vector<size_t> held;
  held.reserve(ranks.size());
  for (const auto& [rank, path] : ranks) held.push_back(rank);
  for (const auto& [rank, path] : ranks) {
    if (rank != files.size())
      fail(ErrorCode::kMissingShard, metadata,
           fmt::format("the rank-local metadata `{}{}{}` is missing: the folder holds those of ranks {}", kRankPrefix,
                       files.size(), kMetadataName, fmt::join(held, ", ")));
    files.push_back(path);
  }
  return files;
}

/// kOptimizer for an FQN below an optimizer's key (`optim.state.0.exp_avg`, `app.optim...`), else kModel.
TensorRole role_of(const std::string& fqn) {
  for (size_t start = 0;;) {
    size_t end = fqn.find('.', start);
    std::string part = fqn.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (end == std::string::npos || std::find(std::begin(kWrappers), std::end(kWrappers), part) == std::end(kWrappers))
      return names_optimizer(part) ? TensorRole::kOptimizer : TensorRole::kModel;
    start = end + 1;
  }
}

/// How reports name an entry's archive: the .distcp file, the FQN and the archive's offset in the file.
std::string archive_name(const ByteSource& data, const std::string& fqn, const DcpArchive& archive) {
  return fmt::format("{}!{}@{}", data.path().string(), fqn, archive.offset);
}

/// The archive's bytes, checked against its file's end.
std::span<const std::byte> archive_bytes(const ByteSource& data, const std::string& fqn, const DcpArchive& archive) {
  if (archive.offset + archive.length > data.size())  // the metadata reader checked the sum does not wrap
    fail(ErrorCode::kOffsetPastEnd, data.path(),
         fmt::format("the archive of `{}` at bytes [{}, {}) runs past the end of the file ({} bytes)", fqn,
                     archive.offset, archive.offset + archive.length, data.size()));
  return data.view(archive.offset, archive.length);
}

/// The archive's bytes as torch.load reads them: in place, or inflated from its zstd frame within `limit` bytes.
std::unique_ptr<ByteSource> archive_source(const ByteSource& data, const std::string& fqn, const DcpArchive& archive,
                                           uint64_t limit, std::string_view where) {
  std::span<const std::byte> bytes = archive_bytes(data, fqn, archive);
  if (!archive.zstd) return span_source(bytes, data.path());
  return memory_source(inflate_zstd_frame(bytes, limit, data.path(), where), data.path());
}

/// What a chunk's archive may inflate to (kWidestElement).
uint64_t archive_limit(const std::string& fqn, const DcpChunk& chunk, const std::filesystem::path& path) {
  std::optional<uint64_t> limit = kWidestElement;
  for (int64_t size : chunk.sizes) limit = limit ? checked_mul(*limit, static_cast<uint64_t>(size)) : std::nullopt;
  if (limit) limit = checked_add(*limit, kArchiveRecords);
  if (!limit) fail(ErrorCode::kValidationOverflow, path, fmt::format("a chunk of `{}`: its size overflows", fqn));
  return *limit;
}

/// The chunk's archive read by the torch zip reader, in place (or, written through DCP's zstd extension, inflated
/// into a source of its own that joins Checkpoint::files): its one tensor as a record of the .distcp file
/// `file`, or nullopt for a dtype precdetect cannot represent (the warning names it).
std::optional<TensorRecord> chunk_record(Checkpoint& checkpoint, size_t file, const std::string& fqn,
                                         const DcpChunk& chunk) {
  const ByteSource& data = *checkpoint.files[file];
  std::string where = fmt::format("the chunk at [{}] of tensor `{}`, at byte {}", fmt::join(chunk.offsets, ", "), fqn,
                                  chunk.archive.offset);
  Checkpoint archive;
  archive.files.push_back(archive_source(data, fqn, chunk.archive, archive_limit(fqn, chunk, data.path()), where));
  const ByteSource* bytes = archive.files[0].get();
  try {
    std::unique_ptr<FormatFile> zip = open_torch_zip(*bytes);
    if (!zip && looks_like_safetensors(data))  // FileSystemWriter(serialization_format=SAFETENSORS)
      fail(ErrorCode::kInvalidDcp, data.path(),
           "a safetensors file, as DCP's SAFETENSORS serialization writes it: not read (torch 2.11's own "
           "FileSystemReader cannot load it either: it hands the chunk to torch.load)");
    if (!zip) fail(ErrorCode::kInvalidDcp, data.path(), "no torch.save archive");
    zip->read(archive, 0);
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("{} ({})", e.what(), where));
  }
  if (archive.files[0].get() != bytes)  // a deflated storage would be inflated into a source of its own
    fail(ErrorCode::kCompressedEntry, data.path(), fmt::format("{} is deflated; dcp.save stores chunks", where));
  bool unreadable_dtype = false;
  for (Warning& warning : archive.warnings) {
    unreadable_dtype = unreadable_dtype || warning.code == WarningCode::kDtypesNotRead;
    for (std::string& name : warning.names)
      if (name.starts_with(kRootName)) name.replace(0, kRootName.size(), fqn);
    checkpoint.warnings.push_back(std::move(warning));
  }
  if (archive.tensors.empty() && unreadable_dtype) return std::nullopt;
  if (archive.tensors.size() != 1)
    fail(ErrorCode::kInvalidDcp, data.path(),
         fmt::format("{} holds {} tensors, not the one of its chunk", where, archive.tensors.size()));
  TensorRecord record = std::move(archive.tensors[0]);
  if (record.shape != chunk.sizes)
    fail(ErrorCode::kInvalidDcp, data.path(),
         fmt::format("{} holds a tensor of shape [{}], the metadata says [{}]", where, fmt::join(record.shape, ", "),
                     fmt::join(chunk.sizes, ", ")));
  record.name = fqn;
  record.file = file;
  record.offset += chunk.archive.offset;
  if (chunk.archive.zstd) {  // the record lies in the inflated archive
    record.file = checkpoint.files.size();
    record.offset -= chunk.archive.offset;
    checkpoint.files.push_back(std::move(archive.files[0]));
  }
  return record;
}

/// One record per chunk of `tensor` (one for a tensor stored whole), of one dtype.
void add_tensor(Checkpoint& checkpoint, const DcpTensor& tensor, const std::map<std::string, size_t>& files) {
  std::optional<DType> dtype;
  for (const DcpChunk& chunk : tensor.chunks) {
    size_t file = files.at(chunk.archive.file);
    std::optional<TensorRecord> record = chunk_record(checkpoint, file, tensor.fqn, chunk);
    if (!record) return;  // its dtype is named in a warning, once
    if (dtype && *dtype != record->dtype)
      fail(ErrorCode::kInvalidDcp, checkpoint.files[file]->path(),
           fmt::format("the chunks of tensor `{}` are of dtypes {} and {}", tensor.fqn, dtype_name(*dtype),
                       dtype_name(record->dtype)));
    dtype = record->dtype;
    record->role = role_of(tensor.fqn);
    if (tensor.chunks.size() > 1) record->chunk_of = ChunkOf{.shape = tensor.size, .offsets = chunk.offsets};
    checkpoint.tensors.push_back(std::move(*record));
  }
}

class DcpFormatFile final : public FormatFile {
 public:
  explicit DcpFormatFile(const ByteSource& source) : source_(source) {}
  FileFormat format() const override { return FileFormat::kDcp; }
  FileFormat read(Checkpoint& checkpoint, size_t file) const override;
  void name_pickles(const std::string& where, PickleVisitor& visitor) const override;

 private:
  /// A folder written without collectives, whose metadata is one file per rank.
  bool rank_local() const { return source_.path().filename() != kMetadataName; }
  /// The folder's table: its `.metadata`, or its ranks' metadata joined.
  DcpMetadata metadata() const;
  /// One metadata file's pickles, then the archives its entries name.
  void name_metadata_pickles(const ByteSource& metadata, const std::string& where, PickleVisitor& visitor) const;
  /// The .distcp files are found as the metadata names them, in its folder (the reader checked each name is a
  /// plain file name).
  std::filesystem::path data_path(const std::string& name) const { return source_.path().parent_path() / name; }
  void name_archive(const ByteSource& data, const std::string& fqn, const DcpArchive& archive, uint64_t limit,
                    PickleVisitor& visitor) const;

  const ByteSource& source_;
};

DcpMetadata DcpFormatFile::metadata() const {
  if (!rank_local()) return read_dcp_metadata(source_.view(0, source_.size()), source_.path());
  std::vector<std::filesystem::path> paths = rank_files(source_.path());
  std::vector<DcpMetadata> ranks;
  for (const std::filesystem::path& path : paths) {
    std::unique_ptr<ByteSource> other = path == source_.path() ? nullptr : map_file(path);
    const ByteSource& bytes = other ? *other : source_;
    ranks.push_back(read_dcp_metadata(bytes.view(0, bytes.size()), path, false));
  }
  return join_dcp_ranks(std::move(ranks), paths);
}

FileFormat DcpFormatFile::read(Checkpoint& checkpoint, size_t file) const {
  DcpMetadata metadata = this->metadata();
  ReadMode mode = checkpoint.files[file]->zero_copy() ? ReadMode::kMmap : ReadMode::kPread;
  std::map<std::string, size_t> files;
  for (const std::string& name : metadata.files) {
    std::filesystem::path path = data_path(name);
    if (!std::filesystem::is_regular_file(path))
      fail(ErrorCode::kMissingShard, source_.path(), fmt::format("the data file `{}` it names is missing", name));
    files[name] = checkpoint.files.size();
    checkpoint.files.push_back(map_file(path, mode));
  }
  for (const DcpTensor& tensor : metadata.tensors) add_tensor(checkpoint, tensor, files);
  return FileFormat::kDcp;
}

void DcpFormatFile::name_archive(const ByteSource& data, const std::string& fqn, const DcpArchive& archive,
                                 uint64_t limit, PickleVisitor& visitor) const {
  std::string where = archive_name(data, fqn, archive);
  try {
    std::unique_ptr<ByteSource> bytes =
        archive_source(data, fqn, archive, limit, fmt::format("the archive of `{}` at byte {}", fqn, archive.offset));
    std::unique_ptr<FormatFile> zip = open_torch_zip(*bytes);
    if (!zip) return visitor.unverified(where, "no torch.save archive, which dcp.load would still hand to torch.load");
    visitor.nested(*zip, where);
  } catch (const Error& e) {  // one damaged archive leaves the others to examine
    visitor.unverified(where, e.what());
  }
}

void DcpFormatFile::name_pickles(const std::string& where, PickleVisitor& visitor) const {
  if (!rank_local()) return name_metadata_pickles(source_, where, visitor);
  std::vector<std::filesystem::path> paths;
  try {
    paths = rank_files(source_.path());
  } catch (const Error& e) {
    name_metadata_pickles(source_, where, visitor);
    return visitor.unverified(where, fmt::format("the other ranks' metadata cannot be listed: {}", e.what()));
  }
  // Each rank loads what its own metadata names: every rank's pickles are examined, copies of one entry too.
  for (const std::filesystem::path& path : paths) {
    if (path == source_.path()) {
      name_metadata_pickles(source_, where, visitor);
      continue;
    }
    try {
      name_metadata_pickles(*map_file(path), path.string(), visitor);
    } catch (const Error& e) {
      visitor.unverified(path.string(), e.what());
    }
  }
}

void DcpFormatFile::name_metadata_pickles(const ByteSource& source, const std::string& where,
                                          PickleVisitor& visitor) const {
  visitor.pickles(source.view(0, source.size()), where, 0, 1);  // dcp.load: pickle.load(metadata_file)
  DcpMetadata metadata;
  try {
    metadata = read_dcp_metadata(source.view(0, source.size()), source.path(), !rank_local());
  } catch (const Error& e) {
    return visitor.unverified(where, fmt::format("its data files cannot be listed: {}", e.what()));
  }
  std::map<std::string, std::unique_ptr<ByteSource>> files;
  for (const std::string& name : metadata.files) {
    try {
      files[name] = map_file(data_path(name));
    } catch (const Error& e) {
      visitor.unverified(where, e.what());
    }
  }
  auto name = [&](const std::string& fqn, const DcpArchive& archive, uint64_t limit) {
    if (auto file = files.find(archive.file); file != files.end())
      name_archive(*file->second, fqn, archive, limit, visitor);
  };
  // dcp.load unpickles the other entries with torch.load(weights_only=False), the chunks with weights_only=True.
  for (const DcpObject& object : metadata.objects) name(object.fqn, object.archive, kMaxObjectArchive);
  for (const DcpTensor& tensor : metadata.tensors)
    for (const DcpChunk& chunk : tensor.chunks) {
      try {
        name(tensor.fqn, chunk.archive, archive_limit(tensor.fqn, chunk, source.path()));
      } catch (const Error& e) {
        visitor.unverified(where, e.what());
      }
    }
}

}  // namespace

std::unique_ptr<FormatFile> open_dcp(const ByteSource& source) {
  bool pickle = source.size() >= 2 && source.view(0, 1)[0] == std::byte{0x80};  // PROTO: dcp.save's pickle.dump
  std::string name = source.path().filename().string();
  if ((name != kMetadataName && !rank_of(name)) || !pickle) return nullptr;
  return std::make_unique<DcpFormatFile>(source);
}

}  // namespace precdetect
