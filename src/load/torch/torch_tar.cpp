#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <utility>

#include "precdetect/core/byte_cursor.h"
#include "precdetect/core/error.h"
#include "precdetect/load/archive_member.h"
#include "precdetect/load/member_contents.h"
#include "precdetect/load/source/source_cursor.h"
#include "precdetect/load/torch/torch_formats.h"
#include "precdetect/load/torch/torch_tensors.h"

namespace precdetect {
namespace {

constexpr uint64_t kBlock = 512;

using Span = TarMember;

constexpr std::string_view kFormat = "torch tar archive";

ByteCursor tar_cursor(std::span<const std::byte> bytes, const ByteSource& source, uint64_t base) {
  return ByteCursor(bytes, source.path(), ErrorCode::kInvalidLegacy, kFormat, base);
}

[[noreturn]] void damaged(const ByteSource& source, uint64_t offset, std::string_view what) {
  fail_at_offset(ErrorCode::kInvalidLegacy, source.path(), kFormat, offset, what);
}

}  // namespace

namespace {

/// A pax extended header's records (`"<length> <key>=<value>\n"`), those that rename the member after it.
void read_pax(std::string_view records, std::string& name, std::string& link) {
  while (!records.empty()) {
    size_t space = records.find(' ');
    char* end = nullptr;
    std::string digits(records.substr(0, space));
    uint64_t length = std::strtoull(digits.c_str(), &end, 10);
    if (space == std::string_view::npos || length <= space + 1 || length > records.size()) return;
    std::string_view record = records.substr(space + 1, length - space - 2);  // less the newline
    size_t equals = record.find('=');
    if (equals != std::string_view::npos && record.substr(0, equals) == "path") name = record.substr(equals + 1);
    if (equals != std::string_view::npos && record.substr(0, equals) == "linkpath") link = record.substr(equals + 1);
    records.remove_prefix(length);
  }
}

/// A member's name and link target as extraction reads them: ustar's prefix joined, or a preceding GNU long name
/// or pax header's.
struct MemberNames {
  std::string next_name, next_link;  ///< from a GNU 'L'/'K' member or a pax 'x' header, for the next member

  /// True when the header at `text` (its data `data`) names the next member instead of being one.
  bool names_next(const char* text, std::span<const std::byte> data) {
    std::string value(reinterpret_cast<const char*>(data.data()), data.size());
    std::string name = value.substr(0, value.find('\0'));  // a GNU long name ends at its NUL
    switch (text[156]) {
      case 'L':
        return next_name = name, true;
      case 'K':
        return next_link = name, true;
      case 'x':
        return read_pax(value, next_name, next_link), true;
      default:
        return false;
    }
  }

  std::pair<std::string, std::string> take(const char* text) {
    std::string name(text, strnlen(text, 100)), link(text + 157, strnlen(text + 157, 100));
    if (std::memcmp(text + 257, "ustar", 5) == 0 && text[345] != '\0')
      name = std::string(text + 345, strnlen(text + 345, 155)) + "/" + name;
    if (!next_name.empty()) name = std::exchange(next_name, {});
    if (!next_link.empty()) link = std::exchange(next_link, {});
    return {name, link};
  }
};

}  // namespace

std::map<std::string, TarMember> read_tar_members(const ByteSource& source, std::vector<std::string>* escapes) {
  ByteCursor tar = source_cursor(source, ErrorCode::kInvalidLegacy, kFormat);  // headers read, members stepped over
  std::map<std::string, Span> members;
  MemberNames names;
  while (tar.remaining() >= kBlock) {
    tar.mark();
    uint64_t at = tar.position();
    const char* text = reinterpret_cast<const char*>(tar.bytes(kBlock).data());
    if (text[0] == '\0') break;  // end of archive
    std::string octal(text + 124, strnlen(text + 124, 12));
    char* end = nullptr;
    uint64_t size = std::strtoull(octal.c_str(), &end, 8);
    if (end == octal.c_str()) tar.fail("unreadable member size");
    if (size > tar.remaining())
      tar.past_the_end(at + kBlock, size, fmt::format("member `{}`", std::string(text, strnlen(text, 100))));
    // Only a header naming the next member is read: a member's data (a model's weights) is not viewed here.
    bool naming = text[156] == 'L' || text[156] == 'K' || text[156] == 'x';
    if (!names.names_next(text, naming ? tar.at(at + kBlock, size, "a name") : std::span<const std::byte>())) {
      auto [name, link] = names.take(text);
      char type = text[156];
      std::optional<std::string> escape = member_name_escape(name);
      if (!escape && (type == '1' || type == '2')) escape = link_member_escape(name, link, type == '1');
      if (escape && escapes) escapes->push_back(*escape);
      if (type == '0' || type == '\0') members[name] = {at + kBlock, size};
    }
    uint64_t padded = (size + kBlock - 1) / kBlock * kBlock;  // size fits the file, so this cannot overflow
    tar.seek(std::min(tar.position() + padded, source.size()));
  }
  return members;
}

namespace {

Span member(const std::map<std::string, Span>& members, const std::string& name, const ByteSource& source) {
  auto found = members.find(name);
  if (found == members.end()) damaged(source, 0, fmt::format("no `{}` member: not a torch.save tar archive", name));
  return found->second;
}

/// Pickles laid end to end inside one member, with raw data in between.
class MemberReader {
 public:
  MemberReader(const ByteSource& source, Span span, pickle::PickleLog* log)
      : cursor_(tar_cursor(source.view(span.offset, span.size), source, span.offset)),
        path_(source.path()),
        log_(log) {}
  pickle::Result next() {
    auto result = pickle::run(cursor_.rest(), path_, cursor_.offset(), nullptr, log_);
    cursor_.skip(result.end - cursor_.offset());
    return result;
  }
  uint64_t integer(size_t bytes) {
    cursor_.mark();
    return bytes == 4 ? cursor_.le<uint32_t>() : cursor_.le<uint64_t>();
  }
  Span skip(uint64_t bytes) {
    cursor_.mark();
    uint64_t at = cursor_.offset();
    cursor_.skip(bytes);
    return {at, bytes};
  }
  uint64_t at() const { return cursor_.offset(); }

 private:
  ByteCursor cursor_;
  const std::filesystem::path& path_;
  pickle::PickleLog* log_;
};

template <typename T>
const T& expect(const pickle::Ref& value, const ByteSource& source, uint64_t at, std::string_view what) {
  const auto* typed = std::get_if<T>(&value->v);
  if (typed == nullptr) damaged(source, at, fmt::format("{} has the wrong type", what));
  return *typed;
}

struct StoredStorage {
  pickle::Storage storage;
  StorageLocation location;
};

/// "storages": a count, then per storage a pickled (key, location, type) and an int64 count with the raw bytes.
std::map<std::string, StoredStorage> read_storages(const ByteSource& source, Span span, pickle::PickleLog* log) {
  MemberReader reader(source, span, log);
  auto count = expect<int64_t>(reader.next().root, source, span.offset, "storage count");
  std::map<std::string, StoredStorage> storages;
  for (int64_t i = 0; i < count; ++i) {
    uint64_t at = reader.at();
    auto header = reader.next();  // owns the values `items` refers to
    const auto& items = expect<pickle::Tuple>(header.root, source, at, "storage header").items;
    if (items.size() != 3) damaged(source, at, "storage header is not (key, location, type)");
    pickle::Storage storage{pickle::key_text(items[0]),
                            expect<pickle::Global>(items[2], source, at, "storage type").name};
    auto dtype = pickle::storage_dtype(storage.type);
    if (!dtype) damaged(source, at, fmt::format("unknown storage type `{}`", storage.type));
    storage.numel = reader.integer(8);
    auto nbytes = checked_mul(storage.numel, static_cast<uint64_t>(dtype_bits(*dtype) / 8));
    if (!nbytes) damaged(source, at, "storage size overflows");
    Span data = reader.skip(*nbytes);
    storages[storage.key] = {storage, {data.offset, data.size}};
  }
  return storages;
}

/// "tensors" (real pre-0.4 files): a count, then per tensor a pickled (key, storage key, type), an int32 rank,
/// 4 padding bytes, rank int64 sizes, rank int64 strides and an int64 storage offset.
std::map<std::string, pickle::Ref> read_tensor_table(const ByteSource& source, Span span,
                                                     const std::map<std::string, StoredStorage>& storages,
                                                     pickle::PickleLog* log) {
  MemberReader reader(source, span, log);
  auto count = expect<int64_t>(reader.next().root, source, span.offset, "tensor count");
  std::map<std::string, pickle::Ref> tensors;
  for (int64_t i = 0; i < count; ++i) {
    uint64_t at = reader.at();
    auto header = reader.next();  // owns the values `items` refers to
    const auto& items = expect<pickle::Tuple>(header.root, source, at, "tensor header").items;
    if (items.size() < 2) damaged(source, at, "tensor header is not (key, storage, type)");
    auto storage = storages.find(pickle::key_text(items[1]));
    if (storage == storages.end()) damaged(source, at, "tensor of an unknown storage");
    uint64_t rank = reader.integer(4);
    reader.integer(4);
    if (rank > 64) damaged(source, at, "tensor rank above 64");
    pickle::Tensor tensor{.storage = storage->second.storage,
                          .dtype = pickle::storage_dtype(storage->second.storage.type),
                          .dtype_name = storage->second.storage.type};
    for (uint64_t d = 0; d < rank; ++d) tensor.size.push_back(static_cast<int64_t>(reader.integer(8)));
    for (uint64_t d = 0; d < rank; ++d) tensor.stride.push_back(static_cast<int64_t>(reader.integer(8)));
    tensor.storage_offset = reader.integer(8);
    tensors[pickle::key_text(items[0])] = pickle::make_value({std::move(tensor)});
  }
  return tensors;
}

}  // namespace

bool looks_like_tar(const ByteSource& source) {
  return source.size() >= kBlock && std::memcmp(source.view(257, 5).data(), "ustar", 5) == 0;
}

FileFormat read_torch_tar(Checkpoint& checkpoint, size_t file) {
  const ByteSource& source = *checkpoint.files[file];
  auto members = read_tar_members(source);
  auto storages = read_storages(source, member(members, "storages", source), checkpoint.pickle_log);
  std::map<std::string, pickle::Ref> tensors;
  if (members.count("tensors"))
    tensors = read_tensor_table(source, members.at("tensors"), storages, checkpoint.pickle_log);
  // Real pre-0.4 pickles name tensors by key; later ones carry ('storage', ...) ids, read as usual.
  auto resolve = [&](const pickle::Ref& id) -> pickle::Ref {
    auto found = tensors.find(pickle::key_text(id));
    return found == tensors.end() ? nullptr : found->second;
  };
  Span objects = member(members, "pickle", source);
  auto result = pickle::run(source.view(objects.offset, objects.size), source.path(), objects.offset, resolve,
                            checkpoint.pickle_log);
  auto locate = [&](const pickle::Storage& storage) {
    auto found = storages.find(storage.key);
    if (found == storages.end())
      fail(ErrorCode::kMissingRecord, source.path(), fmt::format("storage `{}` is not in the archive", storage.key));
    return found->second.location;
  };
  add_torch_tensors(checkpoint, find_tensors(result, source.path()), locate, file, false);
  add_pickle_findings(checkpoint, result, source.path());
  return FileFormat::kTorchTar;
}

namespace {

/// sys_info's pickle, then every pickle the reader itself meets: they lie between raw storages, where only it
/// finds them; and what every other member holds (a tar of files is extracted, its members then loaded). A tar
/// that is no pre-0.4 torch.save archive (no `pickle` and `storages` members) is judged by its members alone.
void name_torch_tar_pickles(const ByteSource& source, const std::string& where, PickleVisitor& visitor) {
  std::map<std::string, TarMember> members;
  std::vector<std::string> escapes;
  try {
    members = read_tar_members(source, &escapes);
  } catch (const Error& e) {
    return visitor.unverified(where, e.what());
  }
  for (std::string& escape : escapes) visitor.tampering(FileTampering::kArchiveEscape, where, std::move(escape));
  static constexpr std::array<std::string_view, 4> kTorchMembers = {"sys_info", "pickle", "storages", "tensors"};
  for (const auto& [name, member] : members)
    if (std::find(kTorchMembers.begin(), kTorchMembers.end(), name) == kTorchMembers.end())
      name_member_contents(source.view(member.offset, member.size), name, where, member.offset, source, visitor);
  if (!members.contains("pickle") || !members.contains("storages")) return;
  if (auto sys_info = members.find("sys_info"); sys_info != members.end())
    visitor.pickles(source.view(sys_info->second.offset, sys_info->second.size), where, sys_info->second.offset, 1);
  pickle::PickleLog log;
  Checkpoint scratch{.pickle_log = &log};
  scratch.files.push_back(span_source(source.view(0, source.size()), source.path()));
  try {
    read_torch_tar(scratch, 0);
  } catch (const Error& e) {
    visitor.unverified(where, e.what());
  }
  visitor.log(log, where);
}

}  // namespace

std::unique_ptr<FormatFile> open_torch_tar(const ByteSource& source) {
  if (!looks_like_tar(source)) return nullptr;
  return plain_format_file(source, FileFormat::kTorchTar, read_torch_tar, name_torch_tar_pickles);
}

}  // namespace precdetect
