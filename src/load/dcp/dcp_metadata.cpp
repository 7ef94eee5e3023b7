#include "precdetect/load/dcp/dcp_metadata.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "precdetect/core/bytes.h"
#include "precdetect/core/error.h"
#include "precdetect/load/pickle/pickle.h"

namespace precdetect {
namespace {

using pickle::Ref;

constexpr std::string_view kMetadataModule = "torch.distributed.checkpoint.metadata";
constexpr std::string_view kFilesystemModule = "torch.distributed.checkpoint.filesystem";
// The registry name of DCP's zstd stream transform (torch/distributed/checkpoint/_extension.py `ZStandard`).
constexpr std::string_view kZstdTransform = "stream.zstd";
// Pairs of chunks compared for overlap, across the file: a grid of FSDP x TP chunks compares a few per chunk, and
// only hostile boxes that all share their first rows come near this.
constexpr uint64_t kMaxComparisons = 1ull << 26;

/// A storage_data key: MetadataIndex(fqn, offset), offset None for an entry that is no tensor.
using IndexKey = std::tuple<std::string, bool, std::vector<int64_t>>;

/// Walks the Metadata object the pickle machine built (dataclasses as NEWOBJ + BUILD of their fields, torch.Size
/// as a REDUCE of torch.Size on a tuple), refusing any other shape by name.
class MetadataReader {
 public:
  MetadataReader(const std::filesystem::path& path, bool whole) : path_(path), whole_(whole) {}

  DcpMetadata read(const Ref& root) {
    const pickle::Dict& metadata = fields(root, kMetadataModule, "Metadata", "the pickled object");
    std::map<IndexKey, DcpArchive> storage = storage_data(dict(field(metadata, "storage_data"), "storage_data"));
    DcpMetadata read;
    std::set<std::string> fqns, files;
    for (const auto& [key, value] : dict(field(metadata, "state_dict_metadata"), "state_dict_metadata").items) {
      std::string fqn = text(key, "a state_dict_metadata key");
      if (!fqns.insert(fqn).second) bad(fmt::format("tensor `{}` is listed twice", fqn));
      if (is_instance(value, "BytesStorageMetadata")) {
        read.objects.push_back({fqn, archive_of(storage, {fqn, false, {}}, fqn)});
        files.insert(read.objects.back().archive.file);
        continue;
      }
      read.tensors.push_back(tensor(fqn, value, storage));
      for (const DcpChunk& chunk : read.tensors.back().chunks) files.insert(chunk.archive.file);
    }
    read.files.assign(files.begin(), files.end());
    return read;
  }

  /// The chunks cover every element of the tensor once (only when whole_: a rank's own chunks need not): each
  /// inside it, no two overlapping, and as many elements in all as the tensor holds.
  void check_tiling(const DcpTensor& tensor) {
    std::optional<uint64_t> total = numel(tensor.size), covered = 0;
    std::vector<const DcpChunk*> filled;
    for (const DcpChunk& chunk : tensor.chunks) {
      if (chunk.offsets.size() != tensor.size.size() || chunk.sizes.size() != tensor.size.size())
        bad(fmt::format("a chunk of tensor `{}` has another rank than the tensor", tensor.fqn));
      for (size_t d = 0; d < tensor.size.size(); ++d)
        if (stop(chunk, d) > static_cast<uint64_t>(tensor.size[d]))
          bad(fmt::format("chunk at [{}] of tensor `{}` of shape [{}] reaches outside it",
                          fmt::join(chunk.offsets, ", "), tensor.fqn, fmt::join(tensor.size, ", ")));
      std::optional<uint64_t> elements = numel(chunk.sizes);
      covered = covered && elements ? checked_add(*covered, *elements) : std::nullopt;
      if (elements != 0u) filled.push_back(&chunk);
    }
    if (!total || !covered)
      fail(ErrorCode::kValidationOverflow, path_, fmt::format("tensor `{}`: size overflows", tensor.fqn));
    check_no_overlap(tensor, filled);
    if (whole_ && *covered != *total)
      bad(fmt::format("the chunks of tensor `{}` cover {} of its {} elements: a gap", tensor.fqn, *covered, *total));
  }

  [[noreturn]] void bad(std::string_view what) const { fail(ErrorCode::kInvalidDcp, path_, what); }

 private:
  static bool is_instance(const Ref& value, std::string_view name) {
    const auto* object = std::get_if<pickle::Opaque>(&value->v);
    return object && object->instance && object->type.module == kMetadataModule && object->type.name == name;
  }

  /// The fields of a dataclass instance of `module.name`: the dict its BUILD set.
  const pickle::Dict& fields(const Ref& value, std::string_view module, std::string_view name, std::string_view what) {
    const auto* object = std::get_if<pickle::Opaque>(&value->v);
    if (!object || !object->instance || object->type.module != module || object->type.name != name)
      bad(fmt::format("{} is not a {}.{}", what, module, name));
    const auto* state = object->state ? std::get_if<pickle::Dict>(&object->state->v) : nullptr;
    if (!state) bad(fmt::format("{} ({}) holds no fields", what, name));
    return *state;
  }

  /// The field `key`, or nullptr when absent (a field left at its default is still written; _StorageInfo leaves
  /// out the transforms it does not have).
  static Ref find(const pickle::Dict& fields, std::string_view key) {
    for (const auto& [name, value] : fields.items)
      if (const auto* text = std::get_if<std::string>(&name->v); text && *text == key) return value;
    return nullptr;
  }
  Ref field(const pickle::Dict& fields, std::string_view key) {
    Ref value = find(fields, key);
    if (!value) bad(fmt::format("field `{}` is missing", key));
    return value;
  }

  const pickle::Dict& dict(const Ref& value, std::string_view what) {
    const auto* dict = std::get_if<pickle::Dict>(&value->v);
    if (!dict) bad(fmt::format("`{}` is not a dict", what));
    return *dict;
  }
  std::string text(const Ref& value, std::string_view what) {
    const auto* text = std::get_if<std::string>(&value->v);
    if (!text) bad(fmt::format("{} is not a string", what));
    return *text;
  }
  uint64_t count(const Ref& value, std::string_view what) {
    const auto* number = std::get_if<int64_t>(&value->v);
    if (!number || *number < 0) bad(fmt::format("{} is not a count", what));
    return static_cast<uint64_t>(*number);
  }

  /// A torch.Size: torch.Size((d0, d1, ...)), each dimension a count.
  std::vector<int64_t> dims(const Ref& value, std::string_view what) {
    const auto* size = std::get_if<pickle::Opaque>(&value->v);
    if (!size || size->instance || size->type.qualified() != "torch.Size")
      bad(fmt::format("{} is not a torch.Size", what));
    const auto* args = size->args ? std::get_if<pickle::Tuple>(&size->args->v) : nullptr;
    const auto* tuple = args && args->items.size() == 1 ? std::get_if<pickle::Tuple>(&args->items[0]->v) : nullptr;
    if (!tuple) bad(fmt::format("{} is not a torch.Size of a tuple", what));
    std::vector<int64_t> dims;
    dims.reserve(tuple->items.size());
    for (const Ref& dim : tuple->items) dims.push_back(static_cast<int64_t>(count(dim, what)));
    return dims;
  }

  /// storage_data: MetadataIndex(fqn, offset) -> _StorageInfo(relative_path, offset, length).
  std::map<IndexKey, DcpArchive> storage_data(const pickle::Dict& entries) {
    std::map<IndexKey, DcpArchive> storage;
    for (const auto& [key, value] : entries.items) {
      const pickle::Dict& index = fields(key, kMetadataModule, "MetadataIndex", "a storage_data key");
      std::string fqn = text(field(index, "fqn"), "a MetadataIndex's fqn");
      Ref offset = find(index, "offset");
      bool tensor = offset && !std::holds_alternative<pickle::None>(offset->v);
      IndexKey at{fqn, tensor, tensor ? dims(offset, fmt::format("the offset of `{}`", fqn)) : std::vector<int64_t>{}};
      if (!storage.emplace(at, archive(value, fqn)).second)
        bad(fmt::format("tensor `{}` has two storage entries at offset [{}]", fqn, fmt::join(std::get<2>(at), ", ")));
    }
    return storage;
  }

  DcpArchive archive(const Ref& value, const std::string& fqn) {
    const pickle::Dict& info =
        fields(value, kFilesystemModule, "_StorageInfo", fmt::format("the storage of `{}`", fqn));
    DcpArchive archive{.file = text(field(info, "relative_path"), "a relative_path"),
                       .offset = count(field(info, "offset"), "an offset"),
                       .length = count(field(info, "length"), "a length")};
    if (archive.file.empty() || archive.file == "." || archive.file == ".." ||
        archive.file.find_first_of("/\\") != std::string::npos)
      bad(fmt::format("tensor `{}` is stored in `{}`, which is no file of this folder", fqn, archive.file));
    if (!checked_add(archive.offset, archive.length))
      fail(ErrorCode::kValidationOverflow, path_, fmt::format("the storage of `{}`: offset + length overflows", fqn));
    Ref transforms = find(info, "transform_descriptors");
    const auto* list = transforms ? std::get_if<pickle::List>(&transforms->v) : nullptr;
    std::vector<std::string> names;
    if (list)
      for (const Ref& item : list->items)
        names.push_back(std::holds_alternative<std::string>(item->v) ? text(item, "") : "?");
    archive.zstd = names.size() == 1 && is_zstd(names[0]);
    if (!names.empty() && !archive.zstd)
      fail(ErrorCode::kCompressedEntry, path_,
           fmt::format("tensor `{}` is written through the stream transforms [{}], which precdetect does not undo "
                       "(it undoes DCP's zstd extension, `{}/1`, alone)",
                       fqn, fmt::join(names, ", "), kZstdTransform));
    return archive;
  }

  /// DCP's zstd extension, of a version its ZStandard.from_descriptor accepts: `stream.zstd/1`, `stream.zstd/1.x`.
  static bool is_zstd(const std::string& descriptor) {
    size_t slash = descriptor.rfind('/');
    if (slash == std::string::npos || descriptor.substr(0, slash) != kZstdTransform) return false;
    std::string version = descriptor.substr(slash + 1);
    return version.substr(0, version.find('.')) == "1";
  }

  DcpArchive archive_of(const std::map<IndexKey, DcpArchive>& storage, const IndexKey& key, const std::string& fqn) {
    auto found = storage.find(key);
    if (found == storage.end())
      bad(fmt::format("`{}` at offset [{}] has no storage entry", fqn, fmt::join(std::get<2>(key), ", ")));
    return found->second;
  }

  DcpTensor tensor(const std::string& fqn, const Ref& value, const std::map<IndexKey, DcpArchive>& storage) {
    const pickle::Dict& meta = fields(value, kMetadataModule, "TensorStorageMetadata", fmt::format("`{}`", fqn));
    DcpTensor tensor{.fqn = fqn, .size = dims(field(meta, "size"), fmt::format("the size of `{}`", fqn))};
    const auto* chunks = std::get_if<pickle::List>(&field(meta, "chunks")->v);
    if (!chunks) bad(fmt::format("the chunks of `{}` are not a list", fqn));
    for (const Ref& item : chunks->items) {
      const pickle::Dict& chunk =
          fields(item, kMetadataModule, "ChunkStorageMetadata", fmt::format("a chunk of `{}`", fqn));
      DcpChunk read{.offsets = dims(field(chunk, "offsets"), fmt::format("a chunk offset of `{}`", fqn)),
                    .sizes = dims(field(chunk, "sizes"), fmt::format("a chunk size of `{}`", fqn))};
      read.archive = archive_of(storage, {fqn, true, read.offsets}, fqn);
      tensor.chunks.push_back(std::move(read));
    }
    check_tiling(tensor);
    return tensor;
  }

  std::optional<uint64_t> numel(const std::vector<int64_t>& dims) {
    std::optional<uint64_t> product = 1;
    for (int64_t dim : dims) product = product ? checked_mul(*product, static_cast<uint64_t>(dim)) : std::nullopt;
    return product;
  }

  /// Compares the boxes that share rows of the first dimension, sorted by their first row.
  void check_no_overlap(const DcpTensor& tensor, std::vector<const DcpChunk*> chunks) {
    auto first = [](const DcpChunk* chunk) {
      return chunk->offsets.empty() ? 0 : static_cast<uint64_t>(chunk->offsets[0]);
    };
    auto end = [](const DcpChunk* chunk) { return chunk->offsets.empty() ? 1 : stop(*chunk, 0); };
    std::sort(chunks.begin(), chunks.end(), [&](const auto* a, const auto* b) { return first(a) < first(b); });
    for (size_t i = 0; i < chunks.size(); ++i)
      for (size_t j = i + 1; j < chunks.size() && first(chunks[j]) < end(chunks[i]); ++j) {
        if (++comparisons_ > kMaxComparisons) bad("too many overlapping chunks to check");
        if (overlap(*chunks[i], *chunks[j]))
          bad(fmt::format("chunks at [{}] and [{}] of tensor `{}` overlap", fmt::join(chunks[i]->offsets, ", "),
                          fmt::join(chunks[j]->offsets, ", "), tensor.fqn));
      }
  }

  /// Where a chunk ends in dimension `d`: each term is below 2^63, so the sum never wraps.
  static uint64_t stop(const DcpChunk& chunk, size_t d) {
    return static_cast<uint64_t>(chunk.offsets[d]) + static_cast<uint64_t>(chunk.sizes[d]);
  }

  static bool overlap(const DcpChunk& a, const DcpChunk& b) {
    for (size_t d = 0; d < a.offsets.size(); ++d)
      if (static_cast<uint64_t>(a.offsets[d]) >= stop(b, d) || static_cast<uint64_t>(b.offsets[d]) >= stop(a, d))
        return false;
    return true;
  }

  const std::filesystem::path& path_;
  bool whole_;
  uint64_t comparisons_ = 0;
};

}  // namespace

DcpMetadata read_dcp_metadata(std::span<const std::byte> bytes, const std::filesystem::path& path, bool whole) {
  // dcp.load reads the file with pickle.load: one pickle, whatever follows it.
  pickle::Result result = pickle::run(bytes, path);
  return MetadataReader(path, whole).read(result.root);
}

void check_dcp_tiling(const DcpTensor& tensor, const std::filesystem::path& path) {
  MetadataReader(path, true).check_tiling(tensor);
}

DcpMetadata join_dcp_ranks(std::vector<DcpMetadata> ranks, std::span<const std::filesystem::path> paths) {
  DcpMetadata joined;
  std::map<std::string, size_t> tensors;  // FQN -> its place in joined.tensors
  std::set<std::string> objects, files;
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    MetadataReader here(paths[rank], false);
    for (DcpObject& object : ranks[rank].objects) {
      if (tensors.contains(object.fqn))
        here.bad(fmt::format("`{}` is no tensor here, and a tensor in the metadata of a lower rank", object.fqn));
      if (objects.insert(object.fqn).second) joined.objects.push_back(std::move(object));
    }
    for (DcpTensor& tensor : ranks[rank].tensors) {
      if (objects.contains(tensor.fqn))
        here.bad(fmt::format("`{}` is a tensor here, and no tensor in the metadata of a lower rank", tensor.fqn));
      auto [at, first] = tensors.emplace(tensor.fqn, joined.tensors.size());
      if (first) {
        joined.tensors.push_back(std::move(tensor));
        continue;
      }
      DcpTensor& into = joined.tensors[at->second];
      if (into.size != tensor.size)
        here.bad(fmt::format("tensor `{}` is of shape [{}] here, [{}] in the metadata of a lower rank", tensor.fqn,
                             fmt::join(tensor.size, ", "), fmt::join(into.size, ", ")));
      for (DcpChunk& chunk : tensor.chunks) {
        auto alike = [&](const DcpChunk& kept) { return kept.offsets == chunk.offsets && kept.sizes == chunk.sizes; };
        // A replicated tensor: without collectives no rank knows another saved it too.
        if (std::none_of(into.chunks.begin(), into.chunks.end(), alike)) into.chunks.push_back(std::move(chunk));
      }
    }
  }
  // The chunks of all ranks together tile each tensor; an error names the folder, its ranks' files together.
  std::filesystem::path folder = paths.empty() ? std::filesystem::path() : paths.front().parent_path();
  MetadataReader all(folder, true);
  for (const DcpTensor& tensor : joined.tensors) {
    try {
      all.check_tiling(tensor);
    } catch (const Error& e) {
      throw Error(e.code(), fmt::format("{} (the rank-local metadata of {} ranks joined)", e.what(), ranks.size()));
    }
    for (const DcpChunk& chunk : tensor.chunks) files.insert(chunk.archive.file);
  }
  for (const DcpObject& object : joined.objects) files.insert(object.archive.file);
  joined.files.assign(files.begin(), files.end());
  return joined;
}

}  // namespace precdetect
