#include "precdetect/load/gguf/gguf.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "precdetect/core/byte_cursor.h"
#include "precdetect/core/bytes.h"
#include "precdetect/core/error.h"
#include "precdetect/load/gguf/gguf_names.h"
#include "precdetect/load/source/source_cursor.h"

namespace precdetect {
namespace {

using nlohmann::ordered_json;

constexpr char kGgufMagic[] = "GGUF";
constexpr uint32_t kDefaultAlignment = 32;
constexpr uint32_t kGgmlMaxDims = 4;  // GGML_MAX_DIMS
// Far above any real file (tens of thousands of tensors, a few dozen keys); a count past these is hostile.
constexpr uint64_t kMaxTensors = 1 << 20;
constexpr uint64_t kMaxKeys = 1 << 20;
constexpr int kMaxArrayDepth = 4;  // arrays of arrays are allowed by the format, and never deep
/// Longer arrays (a tokenizer's vocabulary, its merges) are summarized in Checkpoint::metadata by type and length.
constexpr uint64_t kMaxMetadataArray = 64;

/// GGUF's value types (gguf_type), by id: name, and the fixed size of one value (0: a string or an array).
struct ValueType {
  std::string_view name;
  uint64_t size;
};
constexpr ValueType kValueTypes[] = {{"uint8", 1},  {"int8", 1},    {"uint16", 2}, {"int16", 2},  {"uint32", 4},
                                     {"int32", 4},  {"float32", 4}, {"bool", 1},   {"string", 0}, {"array", 0},
                                     {"uint64", 8}, {"int64", 8},   {"float64", 8}};
constexpr uint32_t kStringType = 8, kArrayType = 9;

/// ggml's tensor types by id (ggml_type, ggml.h).
constexpr std::pair<uint32_t, DType> kTensorTypes[] = {
    {0, DType::F32},     {1, DType::F16},      {2, DType::Q4_0},   {3, DType::Q4_1},    {6, DType::Q5_0},
    {7, DType::Q5_1},    {8, DType::Q8_0},     {9, DType::Q8_1},   {10, DType::Q2_K},   {11, DType::Q3_K},
    {12, DType::Q4_K},   {13, DType::Q5_K},    {14, DType::Q6_K},  {15, DType::Q8_K},   {16, DType::IQ2_XXS},
    {17, DType::IQ2_XS}, {18, DType::IQ3_XXS}, {19, DType::IQ1_S}, {20, DType::IQ4_NL}, {21, DType::IQ3_S},
    {22, DType::IQ2_S},  {23, DType::IQ4_XS},  {24, DType::I8},    {25, DType::I16},    {26, DType::I32},
    {27, DType::I64},    {28, DType::F64},     {29, DType::IQ1_M}, {30, DType::BF16},   {34, DType::TQ1_0},
    {35, DType::TQ2_0},  {39, DType::MXFP4},   {40, DType::NVFP4}, {41, DType::Q1_0},   {42, DType::Q2_0}};

/// The ids ggml retired (ggml.h keeps their names as comments): its reader refuses a file holding them (their
/// block size is 0), llama.cpp saying to convert the repacked ones again from Q4_0 and IQ4_NL.
constexpr std::pair<uint32_t, std::string_view> kRetiredTypes[] = {
    {4, "Q4_2"},      {5, "Q4_3"},        {31, "Q4_0_4_4"},   {32, "Q4_0_4_8"},
    {33, "Q4_0_8_8"}, {36, "IQ4_NL_4_4"}, {37, "IQ4_NL_4_8"}, {38, "IQ4_NL_8_8"}};

/// llama.cpp's names for `general.file_type` (llama_ftype, gguf-py's LlamaFileType): what most tensors hold.
std::string file_type_name(uint64_t id) {
  static constexpr std::pair<uint64_t, std::string_view> kNames[] = {
      {0, "ALL_F32"},           {1, "MOSTLY_F16"},     {2, "MOSTLY_Q4_0"},    {3, "MOSTLY_Q4_1"},
      {7, "MOSTLY_Q8_0"},       {8, "MOSTLY_Q5_0"},    {9, "MOSTLY_Q5_1"},    {10, "MOSTLY_Q2_K"},
      {11, "MOSTLY_Q3_K_S"},    {12, "MOSTLY_Q3_K_M"}, {13, "MOSTLY_Q3_K_L"}, {14, "MOSTLY_Q4_K_S"},
      {15, "MOSTLY_Q4_K_M"},    {16, "MOSTLY_Q5_K_S"}, {17, "MOSTLY_Q5_K_M"}, {18, "MOSTLY_Q6_K"},
      {19, "MOSTLY_IQ2_XXS"},   {20, "MOSTLY_IQ2_XS"}, {21, "MOSTLY_Q2_K_S"}, {22, "MOSTLY_IQ3_XS"},
      {23, "MOSTLY_IQ3_XXS"},   {24, "MOSTLY_IQ1_S"},  {25, "MOSTLY_IQ4_NL"}, {26, "MOSTLY_IQ3_S"},
      {27, "MOSTLY_IQ3_M"},     {28, "MOSTLY_IQ2_S"},  {29, "MOSTLY_IQ2_M"},  {30, "MOSTLY_IQ4_XS"},
      {31, "MOSTLY_IQ1_M"},     {32, "MOSTLY_BF16"},   {36, "MOSTLY_TQ1_0"},  {37, "MOSTLY_TQ2_0"},
      {38, "MOSTLY_MXFP4_MOE"}, {39, "MOSTLY_NVFP4"},  {40, "MOSTLY_Q1_0"},   {41, "MOSTLY_Q2_0"},
      {1024, "GUESSED"}};
  for (auto [number, name] : kNames)
    if (number == id) return std::string(name);
  return fmt::format("unknown ({})", id);
}

class GgufReader {
 public:
  GgufReader(const ByteSource& source, size_t file)
      : source_(source), file_(file), cursor_(source_cursor(source, ErrorCode::kInvalidGguf, "GGUF")) {}

  /// Names each `tokenizer.chat_template` and `tokenizer.chat_template.<name>` string to `visitor`, skipping every
  /// other value (a vocabulary is read past, not decoded).
  void name_templates(const std::string& where, PickleVisitor& visitor) {
    read_preamble();
    count(kMaxTensors, "tensors");
    uint64_t keys = count(kMaxKeys, "key/values");
    for (uint64_t i = 0; i < keys; ++i) {
      std::string key = read_string();
      uint32_t type = value_type();
      if (type == kStringType && (key == "tokenizer.chat_template" || key.starts_with("tokenizer.chat_template.")))
        visitor.chat_template(read_string(), fmt::format("{}!{}", where, key));
      else
        skip_value(type, 0);
    }
  }

  void read(Checkpoint& checkpoint) {
    read_preamble();
    uint64_t tensors = count(kMaxTensors, "tensors");
    uint64_t keys = count(kMaxKeys, "key/values");
    ordered_json metadata = ordered_json::object();
    for (uint64_t i = 0; i < keys; ++i) read_key_value(metadata);
    std::vector<TensorRecord> records;
    // NOLINTNEXTLINE(performance-inefficient-vector-operation): a count the file claims, never reserved ahead
    for (uint64_t i = 0; i < tensors; ++i) records.push_back(read_tensor_info());
    place(records);
    bool first_part = checkpoint.metadata.empty();  // a split file's later parts: the first one describes the model
    name_like_transformers(records, first_part ? metadata : ordered_json::parse(checkpoint.metadata)["key_values"]);
    mark_computed_from_config(records);
    for (TensorRecord& record : records) checkpoint.tensors.push_back(std::move(record));
    if (!first_part) return;
    ordered_json header = {{"format", "gguf"}, {"version", version_}, {"alignment", alignment_}};
    if (metadata.contains("general.file_type") && metadata["general.file_type"].is_number_unsigned())
      header["file_type"] = file_type_name(metadata["general.file_type"].get<uint64_t>());
    header["key_values"] = std::move(metadata);
    checkpoint.metadata = header.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  }

 private:
  void read_preamble() {
    cursor_.mark();
    if (std::memcmp(cursor_.bytes(4).data(), kGgufMagic, 4) != 0) cursor_.fail("no GGUF magic");
    cursor_.mark();
    version_ = cursor_.le<uint32_t>();
    if (version_ > 0xFFFF && (version_ >> 24) <= 3)
      cursor_.fail("a big-endian GGUF file (written for s390x): precdetect reads little-endian ones");
    if (version_ != 2 && version_ != 3)
      cursor_.fail(fmt::format("version {}: precdetect reads versions 2 and 3", version_));
  }

  uint64_t count(uint64_t most, std::string_view what) {
    cursor_.mark();
    uint64_t n = cursor_.le<uint64_t>();
    if (n > most) cursor_.fail(fmt::format("{} {}: more than the {} precdetect accepts", n, what, most));
    return n;
  }

  std::string read_string() {
    cursor_.mark();
    uint64_t length = cursor_.le<uint64_t>();
    return std::string(cursor_.text(length));
  }

  uint32_t value_type() {
    cursor_.mark();
    uint32_t type = cursor_.le<uint32_t>();
    if (type >= std::size(kValueTypes)) cursor_.fail(fmt::format("unknown value type {}", type));
    return type;
  }

  void read_key_value(ordered_json& metadata) {
    std::string key = read_string();
    if (metadata.contains(key)) cursor_.fail(fmt::format("key `{}` appears twice", key));
    uint32_t type = value_type();
    ordered_json value = read_value(type, 0);
    if (key == "general.alignment") set_alignment(type, value);
    metadata[key] = std::move(value);
  }

  void set_alignment(uint32_t type, const ordered_json& value) {
    if (type != 4) cursor_.fail(fmt::format("general.alignment must be a uint32, not a {}", kValueTypes[type].name));
    if (value.get<uint32_t>() == 0 || (value.get<uint32_t>() & (value.get<uint32_t>() - 1)) != 0)
      cursor_.fail(fmt::format("general.alignment must be a power of two, not {}", value.get<uint32_t>()));
    alignment_ = value.get<uint32_t>();
  }

  ordered_json read_value(uint32_t type, int depth) {
    switch (type) {
      case 0:
        return cursor_.le<uint8_t>();
      case 1:
        return static_cast<int8_t>(cursor_.le<uint8_t>());
      case 2:
        return cursor_.le<uint16_t>();
      case 3:
        return static_cast<int16_t>(cursor_.le<uint16_t>());
      case 4:
        return cursor_.le<uint32_t>();
      case 5:
        return static_cast<int32_t>(cursor_.le<uint32_t>());
      case 6:
        return as_number(std::bit_cast<float>(cursor_.le<uint32_t>()));
      case 7:
        return cursor_.le<uint8_t>() != 0;
      case kStringType:
        return read_string();
      case kArrayType:
        return read_array(depth + 1);
      case 10:
        return cursor_.le<uint64_t>();
      case 11:
        return static_cast<int64_t>(cursor_.le<uint64_t>());
      default:
        return as_number(std::bit_cast<double>(cursor_.le<uint64_t>()));
    }
  }

  /// JSON has no NaN or infinity: such a value is written as its name.
  static ordered_json as_number(double value) {
    if (std::isfinite(value)) return value;
    return std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf";
  }

  ordered_json read_array(int depth) {
    if (depth > kMaxArrayDepth) cursor_.fail("arrays nest too deeply");
    uint32_t type = value_type();
    cursor_.mark();
    uint64_t length = cursor_.le<uint64_t>();
    // Every value takes at least its fixed size, a string or an array at least its 8-byte length.
    uint64_t least = std::max<uint64_t>(kValueTypes[type].size, 8);
    if (length > cursor_.remaining() / least)
      cursor_.fail(fmt::format("an array of {} {} values runs past the end", length, kValueTypes[type].name));
    ordered_json values = ordered_json::array();
    for (uint64_t i = 0; i < length; ++i) {
      ordered_json value = read_value(type, depth);
      if (length <= kMaxMetadataArray) values.push_back(std::move(value));
    }
    if (length <= kMaxMetadataArray) return values;
    return {{"array_of", kValueTypes[type].name}, {"length", length}};
  }

  void skip_value(uint32_t type, int depth) {
    if (type == kStringType) return cursor_.skip(cursor_.le<uint64_t>());
    if (type != kArrayType) return cursor_.skip(kValueTypes[type].size);
    if (depth + 1 > kMaxArrayDepth) cursor_.fail("arrays nest too deeply");
    uint32_t element = value_type();
    cursor_.mark();
    uint64_t length = cursor_.le<uint64_t>();
    if (length > cursor_.remaining() / std::max<uint64_t>(kValueTypes[element].size, 8))
      cursor_.fail(fmt::format("an array of {} {} values runs past the end", length, kValueTypes[element].name));
    if (kValueTypes[element].size > 0) return cursor_.skip(length * kValueTypes[element].size);
    for (uint64_t i = 0; i < length; ++i) skip_value(element, depth + 1);
  }

  TensorRecord read_tensor_info() {
    TensorRecord record{.name = read_string(), .file = file_};
    cursor_.mark();
    uint32_t dims = cursor_.le<uint32_t>();
    if (dims > kGgmlMaxDims)
      cursor_.fail(fmt::format("tensor `{}` has {} dimensions, at most {}", record.name, dims, kGgmlMaxDims));
    uint64_t numel = 1;
    for (uint32_t i = 0; i < dims; ++i) {
      uint64_t extent = cursor_.le<uint64_t>();
      auto product = checked_mul(numel, extent);
      if (!product || extent > static_cast<uint64_t>(INT64_MAX))
        cursor_.fail(fmt::format("tensor `{}`: element count overflows", record.name));
      numel = *product;
      record.shape.insert(record.shape.begin(), static_cast<int64_t>(extent));  // innermost first in GGUF
    }
    record.numel = numel;
    cursor_.mark();
    record.dtype = tensor_type(record.name);
    // ggml's reader asks for whole blocks in each row (the innermost dimension), not only in the tensor.
    uint64_t block = std::max<uint64_t>(1, dtype_block_values(record.dtype)), row = dims == 0 ? 1 : record.shape.back();
    if (row % block != 0)
      cursor_.fail(fmt::format("tensor `{}`: rows of {} elements are not whole {} blocks of {}", record.name, row,
                               dtype_name(record.dtype), block));
    auto nbytes = dtype_bytes(record.dtype, numel);
    if (!nbytes) cursor_.fail(fmt::format("tensor `{}`: its size in bytes overflows", record.name));
    record.nbytes = record.storage_nbytes = *nbytes;
    cursor_.mark();
    record.offset = cursor_.le<uint64_t>();  // relative to the data section until place()
    if (record.offset % alignment_ != 0)
      cursor_.fail(fmt::format("tensor `{}`: offset {} is not a multiple of the alignment {}", record.name,
                               record.offset, alignment_));
    return record;
  }

  /// The dtype of the tensor type id at the cursor.
  DType tensor_type(const std::string& name) {
    uint32_t type = cursor_.le<uint32_t>();
    auto known = std::ranges::find(kTensorTypes, type, &std::pair<uint32_t, DType>::first);
    if (known != std::end(kTensorTypes)) return known->second;
    auto retired = std::ranges::find(kRetiredTypes, type, &std::pair<uint32_t, std::string_view>::first);
    if (retired != std::end(kRetiredTypes))
      cursor_.fail(fmt::format("tensor `{}`: type {} ({}) was retired from ggml, whose readers refuse it", name, type,
                               retired->second));
    cursor_.fail(fmt::format("tensor `{}`: unknown type {}", name, type));
  }

  /// The data section starts at the next multiple of the alignment; every tensor lies inside the file, and no
  /// two overlap.
  void place(std::vector<TensorRecord>& records) {
    uint64_t data_start = (cursor_.position() + alignment_ - 1) / alignment_ * alignment_;
    std::vector<const TensorRecord*> by_offset;
    by_offset.reserve(records.size());
    for (TensorRecord& record : records) by_offset.push_back(&record);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const TensorRecord* a, const TensorRecord* b) { return a->offset < b->offset; });
    uint64_t free_from = 0;
    for (const TensorRecord* record : by_offset) {
      if (record->offset < free_from)
        cursor_.fail_at(data_start + record->offset,
                        fmt::format("tensor `{}` overlaps the tensor before it", record->name));
      auto end = checked_add(data_start, record->offset);
      if (end) end = checked_add(*end, record->nbytes);
      if (!end || *end > source_.size())
        cursor_.fail_at(data_start, fmt::format("tensor `{}`: [{}, +{}) of the data runs past the end of the file "
                                                "(truncated?)",
                                                record->name, record->offset, record->nbytes));
      free_from = record->offset + record->nbytes;
    }
    for (TensorRecord& record : records) record.offset += data_start;
  }

  const ByteSource& source_;
  size_t file_;
  ByteCursor cursor_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
};

}  // namespace

bool looks_like_gguf(const ByteSource& source) {
  return source.size() >= 4 && std::memcmp(source.view(0, 4).data(), kGgufMagic, 4) == 0;
}

FileFormat read_gguf(Checkpoint& checkpoint, size_t file) {
  GgufReader(*checkpoint.files[file], file).read(checkpoint);
  return FileFormat::kGguf;
}

void name_gguf_templates(const ByteSource& source, const std::string& where, PickleVisitor& visitor) {
  GgufReader(source, 0).name_templates(where, visitor);
}

std::unique_ptr<FormatFile> open_gguf(const ByteSource& source) {
  return looks_like_gguf(source) ? plain_format_file(source, FileFormat::kGguf, read_gguf, name_gguf_templates)
                                 : nullptr;
}

}  // namespace precdetect
