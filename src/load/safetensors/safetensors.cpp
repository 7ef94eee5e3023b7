#include "precdetect/load/safetensors/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "precdetect/core/bytes.h"
#include "precdetect/core/error.h"
#include "precdetect/core/utf8.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/dcp/dcp_safetensors.h"
#include "precdetect/load/tensor_subclasses.h"

namespace precdetect {
namespace {

using nlohmann::json;

constexpr uint64_t kLengthPrefix = 8;
// A valid header nests three deep (header -> tensor -> shape); anything far deeper is hostile.
constexpr int kMaxJsonDepth = 16;
// The largest real checkpoints hold tens of thousands of tensors across all their shards; a header declaring
// more than this in one file is hostile, and would cost seconds and gigabytes to take apart.
constexpr size_t kMaxTensorsPerFile = 1 << 18;

/// A first pass over the header that builds nothing: it rejects duplicate keys (nlohmann keeps the last one
/// silently; the format forbids them) and deep nesting. Not json::parse's callback, which is quadratic in the
/// members of one object in nlohmann 3.11 (a million-tensor header took minutes; nlohmann/json#5457).
class HeaderChecker : public nlohmann::json_sax<json> {
 public:
  explicit HeaderChecker(const std::filesystem::path& path) : path_(path) {}
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    open_objects_.emplace_back();
    return enter();
  }
  bool key(string_t& key) override {
    if (depth_ == 1 && ++top_level_keys_ > kMaxTensorsPerFile)
      fail(ErrorCode::kInvalidHeader, path_,
           fmt::format("the header declares more than {} tensors, the most precdetect accepts in one file",
                       kMaxTensorsPerFile));
    if (!open_objects_.back().insert(key).second)
      fail(ErrorCode::kDuplicateKey, path_, fmt::format("duplicate key `{}` in header", key));
    return true;
  }
  bool end_object() override {
    open_objects_.pop_back();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override { return enter(); }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;  // json::parse names the error
  }

 private:
  bool enter() {
    if (++depth_ > kMaxJsonDepth) fail(ErrorCode::kInvalidHeader, path_, "header JSON nests too deeply");
    return true;
  }
  const std::filesystem::path& path_;
  std::vector<std::set<std::string>> open_objects_;
  int depth_ = 0;
  size_t top_level_keys_ = 0;
};

json parse_header_json(std::string_view text, const std::filesystem::path& path) {
  HeaderChecker checker(path);
  try {
    json::sax_parse(text, &checker);
    return json::parse(text);
  } catch (const json::exception& e) {
    fail(ErrorCode::kInvalidJson, path, fmt::format("invalid JSON in header: {}", e.what()));
  }
}

uint64_t as_unsigned(const json& value, const std::filesystem::path& path, const std::string& name,
                     std::string_view field) {
  if (!value.is_number_unsigned())
    fail(ErrorCode::kInvalidHeader, path,
         fmt::format("tensor `{}`: {} must hold non-negative integers, got {}", name, field, value.dump()));
  return value.get<uint64_t>();
}

struct Entry {
  TensorRecord record;
  uint64_t begin = 0, end = 0;  // relative to the start of the data buffer
};

Entry parse_entry(const std::string& name, const json& info, const std::filesystem::path& path) {
  if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") || !info.contains("data_offsets"))
    fail(ErrorCode::kInvalidHeader, path,
         fmt::format("tensor `{}`: expected an object with dtype, shape and data_offsets", name));
  const json& dtype = info["dtype"];
  const json& shape = info["shape"];
  const json& offsets = info["data_offsets"];
  if (!dtype.is_string())
    fail(ErrorCode::kInvalidHeader, path, fmt::format("tensor `{}`: dtype is not a string", name));
  auto parsed = parse_dtype(dtype.get<std::string>());
  if (!parsed)
    fail(ErrorCode::kUnknownDtype, path,
         fmt::format("tensor `{}`: unknown dtype `{}`", name, dtype.get<std::string>()));
  if (!shape.is_array()) fail(ErrorCode::kInvalidHeader, path, fmt::format("tensor `{}`: shape is not an array", name));
  if (!offsets.is_array() || offsets.size() != 2)
    fail(ErrorCode::kInvalidHeader, path, fmt::format("tensor `{}`: data_offsets must be [begin, end]", name));

  Entry entry;
  entry.record.name = name;
  entry.record.dtype = *parsed;
  uint64_t numel = 1;
  for (const json& dim : shape) {
    uint64_t extent = as_unsigned(dim, path, name, "shape");
    auto product = checked_mul(numel, extent);
    if (!product || extent > static_cast<uint64_t>(INT64_MAX))
      fail(ErrorCode::kValidationOverflow, path, fmt::format("tensor `{}`: element count overflows", name));
    numel = *product;
    entry.record.shape.push_back(static_cast<int64_t>(extent));
  }
  entry.record.numel = numel;
  entry.begin = as_unsigned(offsets[0], path, name, "data_offsets");
  entry.end = as_unsigned(offsets[1], path, name, "data_offsets");
  return entry;
}

std::map<std::string, std::string> parse_metadata(const json& value, const std::filesystem::path& path) {
  std::map<std::string, std::string> metadata;
  if (value.is_null()) return metadata;  // the reference reader's Option<HashMap>: null means none
  if (!value.is_object()) fail(ErrorCode::kInvalidHeader, path, "__metadata__ must be a string-to-string map");
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string())
      fail(ErrorCode::kInvalidHeader, path, fmt::format("__metadata__ value for `{}` is not a string", key));
    metadata[key] = item.get<std::string>();
  }
  return metadata;
}

/// Rules 6-8 of the reference reader: contiguous data (no holes, no overlaps), sizes that match shape and
/// dtype, and a buffer that ends exactly at the end of the file.
void check_layout(std::vector<Entry>& entries, uint64_t buffer_size, const std::filesystem::path& path) {
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
  uint64_t expected_begin = 0;
  for (Entry& entry : entries) {
    const std::string& name = entry.record.name;
    if (entry.begin != expected_begin || entry.end < entry.begin)
      fail(ErrorCode::kInvalidOffset, path,
           fmt::format("invalid offset for tensor `{}`: [{}, {}) where the data should begin at {}", name, entry.begin,
                       entry.end, expected_begin));
    auto bits = checked_mul(entry.record.numel, static_cast<uint64_t>(dtype_bits(entry.record.dtype)));
    if (!bits) fail(ErrorCode::kValidationOverflow, path, fmt::format("tensor `{}`: byte size overflows", name));
    if (*bits % 8 != 0)
      fail(ErrorCode::kMisalignedSlice, path, fmt::format("tensor `{}`: {} bits is not whole bytes", name, *bits));
    if (entry.end - entry.begin != *bits / 8)
      fail(ErrorCode::kSizeMismatch, path,
           fmt::format("tensor `{}`: shape and dtype need {} bytes but data_offsets span {}", name, *bits / 8,
                       entry.end - entry.begin));
    entry.record.nbytes = entry.record.storage_nbytes = *bits / 8;
    expected_begin = entry.end;
  }
  if (expected_begin > buffer_size)
    fail(ErrorCode::kOffsetPastEnd, path,
         fmt::format("tensor data ends at byte {} of the buffer but the file holds only {} (truncated?)",
                     expected_begin, buffer_size));
  if (expected_begin < buffer_size)
    fail(ErrorCode::kTrailingBytes, path,
         fmt::format("{} trailing bytes after the last tensor", buffer_size - expected_begin));
}

}  // namespace

bool looks_like_safetensors(const ByteSource& source) {
  if (source.size() < kLengthPrefix + 1) return false;
  uint64_t length = read_le<uint64_t>(source.view(0, kLengthPrefix), 0);
  if (length == 0 || length > kMaxSafetensorsHeader || length > source.size() - kLengthPrefix) return false;
  auto header = source.view(kLengthPrefix, length);
  auto first = std::find_if(header.begin(), header.end(), [](std::byte b) {
    return b != std::byte{' '} && b != std::byte{'\t'} && b != std::byte{'\n'} && b != std::byte{'\r'};
  });
  return first != header.end() && *first == std::byte{'{'};
}

SafetensorsHeader read_safetensors_header(const ByteSource& source, size_t file_index) {
  const auto& path = source.path();
  if (source.size() < kLengthPrefix)
    fail(ErrorCode::kHeaderTooSmall, path, fmt::format("header too small: file has {} bytes", source.size()));
  uint64_t length = read_le<uint64_t>(source.view(0, kLengthPrefix), 0);
  if (length > kMaxSafetensorsHeader)
    fail(ErrorCode::kHeaderTooLarge, path,
         fmt::format("header too large: {} bytes declared, limit {}", length, kMaxSafetensorsHeader));
  if (length > source.size() - kLengthPrefix)
    fail(ErrorCode::kInvalidHeaderLength, path,
         fmt::format("invalid header length: {} bytes declared but the file has {}", length, source.size()));

  auto bytes = source.view(kLengthPrefix, length);
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (!is_utf8(text)) fail(ErrorCode::kInvalidUtf8, path, "invalid UTF-8 in header");
  json header = parse_header_json(text, path);
  if (!header.is_object()) fail(ErrorCode::kInvalidHeader, path, "header is not a JSON object");

  SafetensorsHeader result;
  std::vector<Entry> entries;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__")
      result.metadata = parse_metadata(info, path);
    else
      entries.push_back(parse_entry(name, info, path));
  }
  uint64_t data_start = kLengthPrefix + length;
  check_layout(entries, source.size() - data_start, path);
  for (Entry& entry : entries) {
    entry.record.offset = data_start + entry.begin;
    entry.record.file = file_index;
    result.tensors.push_back(std::move(entry.record));
  }
  return result;
}

namespace {

FileFormat read_safetensors(Checkpoint& checkpoint, size_t file) {
  SafetensorsHeader header = read_safetensors_header(*checkpoint.files[file], file);
  // A rank's file of DCP's HuggingFaceStorageWriter: its tensors are chunks, joined once every file is read.
  mark_dcp_safetensors_chunks(header.tensors, header.metadata, checkpoint.files[file]->path());
  add_safetensors_subclasses(checkpoint.tensor_subclasses, header.metadata);
  for (TensorRecord& record : header.tensors) checkpoint.tensors.push_back(std::move(record));
  return FileFormat::kSafetensors;
}

}  // namespace

std::unique_ptr<FormatFile> open_safetensors(const ByteSource& source) {
  if (!looks_like_safetensors(source)) return nullptr;
  return plain_format_file(source, FileFormat::kSafetensors, read_safetensors, holds_no_pickles);
}

}  // namespace precdetect
