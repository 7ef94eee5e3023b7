#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "precdetect/core/bytes.h"
#include "precdetect/core/error.h"
#include "precdetect/load/torch/torch_formats.h"
#include "precdetect/load/torch/torch_tensors.h"

namespace precdetect {
namespace {

// pickle protocol 2 of the int 0x1950a86a20f9469cfc6c: PROTO 2, LONG1 10 bytes, STOP.
constexpr unsigned char kLegacyMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46,
                                          0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e};
constexpr int64_t kLegacyProtocol = 1001;
constexpr size_t kLegacyPickles = 5;  // magic number, protocol, sys_info, the object, the storage keys
// The pickles come before the storages, their length unknown until read: each is read from a window of the file
// that grows until it holds the pickle, so that a remote file moves its pickles, not its storages (a remote view is
// capped: remote_source.h). A local file's first window holds them.
constexpr uint64_t kFirstWindow = uint64_t{64} << 10;

/// The pickle at `at`: run on windows of the file from `at`, four times larger each time the pickle machine finds
/// the window too short (or the pickle malformed, which the whole rest of the file then shows).
pickle::Result next_pickle(const ByteSource& source, uint64_t at) {
  uint64_t rest = source.size() - at;
  for (uint64_t window = std::min(rest, kFirstWindow);; window = std::min(rest, window * 4)) {
    try {
      return pickle::run(source.view(at, window), source.path(), at);
    } catch (const Error& e) {
      if (window == rest || e.code() != ErrorCode::kInvalidPickle) throw;
    }
  }
}

/// Where the five pickles end: the bytes the safety check reads. The whole file when they cannot be followed, for
/// the safety check to say why.
uint64_t pickles_end(const ByteSource& source) {
  try {
    uint64_t at = 0;
    for (size_t i = 0; i < kLegacyPickles; ++i) at = next_pickle(source, at).end;
    return at;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kInvalidPickle) throw;
    return source.size();
  }
}

/// sys_info {'little_endian': bool, ...}: true when the file was written big-endian.
bool written_big_endian(const pickle::Ref& sys_info) {
  if (const auto* dict = std::get_if<pickle::Dict>(&sys_info->v))
    for (const auto& [key, value] : dict->items)
      if (const auto* name = std::get_if<std::string>(&key->v); name && *name == "little_endian")
        if (const auto* little = std::get_if<bool>(&value->v)) return !*little;
  return false;
}

/// A storage the key list names, of a dtype precdetect reads.
struct ListedStorage {
  const std::string& key;
  DType dtype;
  uint64_t numel;  ///< as the pickle says
};

std::optional<ListedStorage> listed_storage(const pickle::Ref& key_value,
                                            const std::map<std::string, pickle::Storage>& storages) {
  const auto* key = std::get_if<std::string>(&key_value->v);
  auto storage = key ? storages.find(*key) : storages.end();
  auto dtype = storage != storages.end() ? pickle::storage_dtype(storage->second.type) : std::nullopt;
  if (!dtype) return std::nullopt;
  return ListedStorage{*key, *dtype, storage->second.numel};
}

/// Where a storage of `count` elements whose count lies at `at` ends; nullopt when that overflows.
std::optional<uint64_t> storage_end(uint64_t at, uint64_t count, DType dtype) {
  auto nbytes = checked_mul(count, static_cast<uint64_t>(dtype_bits(dtype) / 8));
  return nbytes ? checked_add(at + 8, *nbytes) : std::nullopt;
}

/// Where each storage's element count lies if the counts are the pickle's: asked for together, a remote file's
/// counts cost one round of requests, not one each (locate_storages checks every count it finds).
std::vector<ByteRange> predicted_counts(uint64_t at, const pickle::List& keys,
                                        const std::map<std::string, pickle::Storage>& storages) {
  std::vector<ByteRange> counts;
  for (const pickle::Ref& key_value : keys.items) {
    std::optional<ListedStorage> storage = listed_storage(key_value, storages);
    std::optional<uint64_t> end = storage ? storage_end(at, storage->numel, storage->dtype) : std::nullopt;
    if (!end) break;
    counts.push_back({at, 8});
    at = *end;
  }
  return counts;
}

/// After the pickles, each storage in key order: an int64 element count, then count x element size bytes.
std::map<std::string, StorageLocation> locate_storages(const ByteSource& source, uint64_t at,
                                                       const pickle::Ref& key_list,
                                                       const std::map<std::string, pickle::Storage>& storages) {
  const auto* keys = std::get_if<pickle::List>(&key_list->v);
  if (keys == nullptr) fail(ErrorCode::kInvalidLegacy, source.path(), "the storage key list is not a list");
  source.prefetch(predicted_counts(at, *keys, storages));
  std::map<std::string, StorageLocation> located;
  for (const pickle::Ref& key_value : keys->items) {
    std::optional<ListedStorage> storage = listed_storage(key_value, storages);
    if (!storage)
      fail(ErrorCode::kInvalidLegacy, source.path(), fmt::format("storage at offset {} has no known type", at));
    if (!checked_add(at, 8) || at + 8 > source.size())
      fail(ErrorCode::kInvalidLegacy, source.path(),
           fmt::format("storage `{}` is missing (truncated file)", storage->key));
    uint64_t count = read_le<uint64_t>(source.view(at, 8), 0);
    std::optional<uint64_t> end = storage_end(at, count, storage->dtype);
    if (!end || *end > source.size())
      fail(ErrorCode::kInvalidLegacy, source.path(),
           fmt::format("storage `{}` at offset {} declares {} elements, past the end of the file", storage->key, at,
                       count));
    located[storage->key] = {at + 8, *end - (at + 8)};
    at = *end;
  }
  return located;
}

}  // namespace

bool looks_like_torch_legacy(const ByteSource& source) {
  return source.size() >= sizeof(kLegacyMagic) &&
         std::memcmp(source.view(0, sizeof(kLegacyMagic)).data(), kLegacyMagic, sizeof(kLegacyMagic)) == 0;
}

FileFormat read_torch_legacy(Checkpoint& checkpoint, size_t file) {
  const ByteSource& source = *checkpoint.files[file];
  uint64_t at = next_pickle(source, 0).end;  // the magic number
  auto protocol = next_pickle(source, at);
  const auto* version = std::get_if<int64_t>(&protocol.root->v);
  if (version == nullptr || *version != kLegacyProtocol)
    fail(ErrorCode::kInvalidLegacy, source.path(), "unsupported legacy protocol version");
  auto sys_info = next_pickle(source, protocol.end);
  auto objects = next_pickle(source, sys_info.end);
  auto keys = next_pickle(source, objects.end);
  auto located = locate_storages(source, keys.end, keys.root, objects.storages);
  auto locate = [&](const pickle::Storage& storage) { return located.at(storage.key); };
  for (const auto& [key, storage] : objects.storages)
    if (!located.count(key))
      fail(ErrorCode::kInvalidLegacy, source.path(), fmt::format("storage `{}` is referenced but not stored", key));
  add_torch_tensors(checkpoint, find_tensors(objects, source.path()), locate, file, written_big_endian(sys_info.root));
  add_pickle_findings(checkpoint, objects, source.path());
  return FileFormat::kTorchLegacy;
}

std::unique_ptr<FormatFile> open_torch_legacy(const ByteSource& source) {
  if (!looks_like_torch_legacy(source)) return nullptr;
  return plain_format_file(source, FileFormat::kTorchLegacy, read_torch_legacy,
                           [](const ByteSource& file, const std::string& where, PickleVisitor& visitor) {
                             visitor.pickles(file.view(0, pickles_end(file)), where, 0, kLegacyPickles);
                           });
}

}  // namespace precdetect
