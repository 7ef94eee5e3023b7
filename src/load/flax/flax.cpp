#include "precdetect/load/flax/flax.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "precdetect/core/bytes.h"
#include "precdetect/core/error.h"
#include "precdetect/load/flax/msgpack.h"
#include "precdetect/load/numpy/npy.h"
#include "precdetect/load/source/decoded_source.h"

namespace precdetect {
namespace {

constexpr int8_t kNdarray = 1, kScalar = 3;  // flax.serialization._MsgpackExtType
constexpr std::string_view kChunked = "__msgpack_chunked_array__";

/// NumPy's dtype names as flax writes them (arr.dtype.name), for the dtypes precdetect reads.
constexpr std::pair<std::string_view, DType> kFlaxTypes[] = {
    {"float64", DType::F64},         {"float32", DType::F32},
    {"float16", DType::F16},         {"bfloat16", DType::BF16},
    {"int64", DType::I64},           {"int32", DType::I32},
    {"int16", DType::I16},           {"int8", DType::I8},
    {"uint64", DType::U64},          {"uint32", DType::U32},
    {"uint16", DType::U16},          {"uint8", DType::U8},
    {"bool", DType::BOOL},           {"float8_e4m3fn", DType::F8_E4M3},
    {"float8_e5m2", DType::F8_E5M2}, {"complex64", DType::C64}};

/// One array as its extension holds it, its bytes a place in the file.
struct FlaxArray {
  std::vector<int64_t> shape;
  uint64_t numel = 1;
  std::string dtype_name;
  std::optional<DType> dtype;
  msgpack::Binary bytes;
  std::optional<uint64_t> region;  ///< a chunked array's bytes, joined in a decoded region at this offset
};

class FlaxReader {
 public:
  FlaxReader(Checkpoint& checkpoint, size_t file)
      : checkpoint_(checkpoint),
        file_(file),
        source_(*checkpoint.files[file]),
        decoded_(std::make_unique<DecodedSource>(std::move(checkpoint.files[file]))) {}

  void read() {
    msgpack::Value root = msgpack::read(source_, 0, source_.size());
    if (!root.map()) fail(ErrorCode::kInvalidMsgpack, path(), "the top value is not a map of parameters");
    walk(root, "");
    warn_about(checkpoint_.warnings, WarningCode::kDtypesNotRead, path().string(), std::move(not_read_));
    checkpoint_.files[file_] = std::move(decoded_);
  }

 private:
  const std::filesystem::path& path() const { return decoded_->path(); }

  [[noreturn]] void fail_at(uint64_t offset, std::string_view what) const {
    fail(ErrorCode::kInvalidMsgpack, path(), fmt::format("invalid Flax checkpoint at offset {}: {}", offset, what));
  }

  void walk(const msgpack::Value& value, const std::string& name) {
    if (const msgpack::Map* entries = value.map()) {
      if (value.find(kChunked)) return add(chunked(value, name), name);
      std::set<std::string> keys;
      for (size_t i = 0; i < entries->keys.size(); ++i) {
        std::string part = key_text(entries->keys[i], name);
        if (!keys.insert(part).second)
          fail(ErrorCode::kInvalidMsgpack, path(), fmt::format("key `{}` appears twice in `{}`", part, name));
        walk(entries->values[i], name.empty() ? part : fmt::format("{}/{}", name, part));
      }
      return;
    }
    const auto* extension = std::get_if<msgpack::Extension>(&value.data);
    if (extension && (extension->type == kNdarray || extension->type == kScalar)) {
      FlaxArray array = parse_array(*extension, name);
      return add(array, name);
    }
    not_read_.push_back(fmt::format("{} (not an array)", name));
  }

  std::string key_text(const msgpack::Value& key, const std::string& parent) const {
    if (const auto* text = key.text()) return std::string(*text);
    if (auto number = key.unsigned_value()) return std::to_string(*number);
    fail(ErrorCode::kInvalidMsgpack, path(), fmt::format("a key of `{}` is neither a string nor an integer", parent));
  }

  /// [shape, dtype name, bytes]: the shape's elements must hold exactly the bytes.
  FlaxArray parse_array(const msgpack::Extension& extension, const std::string& name) const {
    msgpack::Value inner = msgpack::read(source_, extension.offset, extension.size);
    const msgpack::Array* parts = inner.array();
    if (!parts || parts->size() != 3)
      fail_at(extension.offset, fmt::format("array `{}` is not [shape, dtype, bytes]", name));
    FlaxArray array;
    const msgpack::Array* shape = (*parts)[0].array();
    if (!shape || shape->size() > kNumpyMaxDims)
      fail_at(extension.offset,
              fmt::format("array `{}`: its shape is not a list of at most {} sizes", name, kNumpyMaxDims));
    for (const msgpack::Value& dim : *shape) array.shape.push_back(extent(dim, extension.offset, name, array.numel));
    const msgpack::Value& dtype = (*parts)[1];
    if (const auto* text = dtype.text())
      array.dtype_name = *text;
    else if (const auto* raw = std::get_if<msgpack::Binary>(&dtype.data)) {
      auto text = source_.view(raw->offset, raw->size);  // a name, in the block before the array's bytes
      array.dtype_name.assign(reinterpret_cast<const char*>(text.data()), text.size());
    } else
      fail_at(extension.offset, fmt::format("array `{}`: its dtype is not a name", name));
    for (auto [flax_name, ours] : kFlaxTypes)
      if (flax_name == array.dtype_name) array.dtype = ours;
    const auto* bytes = std::get_if<msgpack::Binary>(&(*parts)[2].data);
    if (!bytes) fail_at(extension.offset, fmt::format("array `{}`: its data is not bytes", name));
    array.bytes = *bytes;
    if (array.dtype) check_size(array, name, extension.offset);
    return array;
  }

  int64_t extent(const msgpack::Value& dim, uint64_t offset, const std::string& name, uint64_t& numel) const {
    auto value = dim.unsigned_value();
    auto product = value ? checked_mul(numel, *value) : std::nullopt;
    if (!product || *value > static_cast<uint64_t>(INT64_MAX))
      fail_at(offset,
              fmt::format("array `{}`: a dimension that is not a size, or an element count that overflows", name));
    numel = *product;
    return static_cast<int64_t>(*value);
  }

  void check_size(const FlaxArray& array, const std::string& name, uint64_t offset) const {
    auto nbytes = dtype_bytes(*array.dtype, array.numel);
    if (!nbytes || *nbytes != array.bytes.size)
      fail_at(offset,
              fmt::format("array `{}`: shape ({}) of {} needs {} bytes but it holds {}", name,
                          fmt::join(array.shape, ", "), array.dtype_name, nbytes.value_or(0), array.bytes.size));
  }

  /// flax's _chunk: the shape as {"0": n, ...}, the flattened array's parts as {"0": array, ...}. One part is
  /// read where it lies; several are copied from the file into a decoded region when analyzed.
  FlaxArray chunked(const msgpack::Value& value, const std::string& name) {
    const msgpack::Value* shape = value.find("shape");
    const msgpack::Value* chunks = value.find("chunks");
    if (!shape || !shape->map() || !chunks || !chunks->map() || chunks->map()->keys.empty())
      fail(ErrorCode::kInvalidMsgpack, path(), fmt::format("chunked array `{}` has no shape or chunks", name));
    FlaxArray whole;
    for (size_t i = 0; i < shape->map()->keys.size(); ++i) {
      const msgpack::Value* dim = shape->find(std::to_string(i));
      if (!dim) fail(ErrorCode::kInvalidMsgpack, path(), fmt::format("chunked array `{}`: shape has no `{}`", name, i));
      whole.shape.push_back(extent(*dim, 0, name, whole.numel));
    }
    std::vector<msgpack::Binary> parts;
    for (size_t i = 0; i < chunks->map()->keys.size(); ++i) {
      const msgpack::Value* chunk = chunks->find(std::to_string(i));
      const auto* extension = chunk ? std::get_if<msgpack::Extension>(&chunk->data) : nullptr;
      if (!extension || extension->type != kNdarray)
        fail(ErrorCode::kInvalidMsgpack, path(),
             fmt::format("chunked array `{}`: chunk `{}` is not an array", name, i));
      FlaxArray part = parse_array(*extension, fmt::format("{}/chunks/{}", name, i));
      if (i > 0 && part.dtype_name != whole.dtype_name)
        fail(ErrorCode::kInvalidMsgpack, path(), fmt::format("chunked array `{}`: its chunks differ in dtype", name));
      whole.dtype_name = part.dtype_name;
      whole.dtype = part.dtype;
      parts.push_back(part.bytes);
    }
    if (!whole.dtype) return whole;
    uint64_t total = 0;
    for (auto part : parts) total += part.size;
    if (dtype_bytes(*whole.dtype, whole.numel) != total)
      fail(ErrorCode::kInvalidMsgpack, path(),
           fmt::format("chunked array `{}`: its chunks hold {} bytes, not what shape ({}) needs", name, total,
                       fmt::join(whole.shape, ", ")));
    if (parts.size() == 1) {
      whole.bytes = parts.front();
      return whole;
    }
    whole.region = decoded_->add_region(total, [parts, &source = source_](std::span<std::byte> dest) {
      for (auto part : parts) {
        source.read(part.offset, dest.first(part.size));
        dest = dest.subspan(part.size);
      }
    });
    return whole;
  }

  void add(const FlaxArray& array, const std::string& name) {
    if (!array.dtype) return not_read_.push_back(fmt::format("{} ({})", name, array.dtype_name));
    TensorRecord record{.name = name, .dtype = *array.dtype, .shape = array.shape, .numel = array.numel};
    record.nbytes = record.storage_nbytes = *dtype_bytes(*array.dtype, array.numel);
    record.offset = array.region.value_or(array.bytes.offset);
    record.file = file_;
    record.torch_name = torch_name_of_flax_path(name);
    if (name.ends_with("/kernel")) record.torch_layout = TorchLayout::kFlaxKernel;
    checkpoint_.tensors.push_back(std::move(record));
  }

  Checkpoint& checkpoint_;
  size_t file_;
  const ByteSource& source_;  ///< the file, owned by decoded_: its structure is read by range, never whole
  std::unique_ptr<DecodedSource> decoded_;
  std::vector<std::string> not_read_;
};

}  // namespace

bool looks_like_flax(const ByteSource& source) {
  if (source.path().extension() != ".msgpack" || source.size() == 0) return false;
  auto first = static_cast<uint8_t>(source.view(0, 1)[0]);
  return (first >= 0x80 && first <= 0x8f) || first == 0xde || first == 0xdf;
}

FileFormat read_flax(Checkpoint& checkpoint, size_t file) {
  FlaxReader(checkpoint, file).read();
  return FileFormat::kFlax;
}

std::string torch_name_of_flax_path(std::string_view path) {
  std::string name(path);
  std::replace(name.begin(), name.end(), '/', '.');
  for (std::string_view last : {".kernel", ".embedding", ".scale"})
    if (name.ends_with(last)) return name.substr(0, name.size() - last.size()) + ".weight";
  return name;
}

std::unique_ptr<FormatFile> open_flax(const ByteSource& source) {
  return looks_like_flax(source) ? plain_format_file(source, FileFormat::kFlax, read_flax, holds_no_pickles) : nullptr;
}

}  // namespace precdetect
