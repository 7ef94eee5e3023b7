#include "precdetect/load/numpy/npy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <regex>

#include "precdetect/core/byte_cursor.h"
#include "precdetect/core/bytes.h"
#include "precdetect/core/error.h"

namespace precdetect {
namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

/// The text after `'key':` in the dict literal, up to the end of its value (a quoted string, a (...) or [...]
/// group, or a bare word); empty when the key is absent.
std::string value_of(std::string_view dict, std::string_view key) {
  size_t at = std::string::npos;
  for (char quote : {'\'', '"'}) {
    size_t found = dict.find(fmt::format("{}{}{}", quote, key, quote));
    if (found != std::string::npos) at = found + key.size() + 2;
  }
  if (at == std::string::npos) return "";
  at = dict.find(':', at);
  if (at == std::string::npos) return "";
  at = dict.find_first_not_of(' ', at + 1);
  if (at == std::string::npos) return "";
  char open = dict[at];
  if (open == '\'' || open == '"') {
    size_t close = dict.find(open, at + 1);
    return close == std::string::npos ? "" : std::string(dict.substr(at + 1, close - at - 1));
  }
  if (open == '(' || open == '[') {
    char close_char = open == '(' ? ')' : ']';
    int depth = 0;
    for (size_t i = at; i < dict.size(); ++i) {
      depth += dict[i] == open ? 1 : dict[i] == close_char ? -1 : 0;
      if (depth == 0) return std::string(dict.substr(at, i - at + 1));
    }
    return "";
  }
  size_t end = dict.find_first_of(",}", at);
  return std::string(dict.substr(at, end == std::string::npos ? std::string::npos : end - at));
}

/// A plain descr: byte order, then a numeric, bool, string, bytes, void or datetime kind and a size.
bool plain_descr(const std::string& descr) {
  static const std::regex kPlain(R"([<>|=]?[biufcSUVmM?]\d*(\[[a-zA-Z]+\])?)");
  return std::regex_match(descr, kPlain);
}

std::vector<uint64_t> parse_shape(const std::string& text, const std::filesystem::path& path) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    fail(ErrorCode::kInvalidNumpy, path, fmt::format("shape `{}` is not a tuple", text));
  std::vector<uint64_t> shape;
  std::string inner = text.substr(1, text.size() - 2);
  if (static_cast<size_t>(std::count(inner.begin(), inner.end(), ',')) > kNumpyMaxDims)
    fail(ErrorCode::kInvalidNumpy, path, fmt::format("shape `{}` has more than {} dimensions", text, kNumpyMaxDims));
  for (size_t at = 0; at < inner.size();) {
    size_t end = inner.find(',', at);
    std::string part = inner.substr(at, end == std::string::npos ? std::string::npos : end - at);
    part.erase(0, part.find_first_not_of(' '));
    part.erase(part.find_last_not_of(' ') + 1);
    if (!part.empty()) {
      if (part.find_first_not_of("0123456789") != std::string::npos || part.size() > 19)
        fail(ErrorCode::kInvalidNumpy, path, fmt::format("shape `{}` holds `{}`, not a size", text, part));
      shape.push_back(std::stoull(part));
    }
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return shape;
}

/// NumPy's kind and item size -> our dtype.
constexpr std::pair<std::string_view, DType> kNumpyTypes[] = {
    {"f2", DType::F16}, {"f4", DType::F32},  {"f8", DType::F64}, {"i1", DType::I8},  {"i2", DType::I16},
    {"i4", DType::I32}, {"i8", DType::I64},  {"u1", DType::U8},  {"u2", DType::U16}, {"u4", DType::U32},
    {"u8", DType::U64}, {"b1", DType::BOOL}, {"c8", DType::C64}};

}  // namespace

std::optional<DType> npy_dtype(const NpyHeader& header) {
  std::string_view descr = header.descr;
  if (!descr.empty() && std::string_view("<>|=").find(descr.front()) != std::string_view::npos) descr.remove_prefix(1);
  for (auto [name, dtype] : kNumpyTypes)
    if (descr == name) return dtype;
  return std::nullopt;
}

TensorRecord npy_tensor(const NpyHeader& header, DType dtype, std::string name, uint64_t data_offset,
                        uint64_t available, const std::filesystem::path& path) {
  TensorRecord record{.name = std::move(name), .dtype = dtype, .offset = data_offset};
  record.big_endian = header.descr.front() == '>' && dtype_bits(dtype) > 8;
  uint64_t numel = 1;
  for (uint64_t extent : header.shape) {
    auto product = checked_mul(numel, extent);
    if (!product || extent > static_cast<uint64_t>(INT64_MAX))
      fail(ErrorCode::kInvalidNumpy, path, fmt::format("array `{}`: element count overflows", record.name));
    numel = *product;
    record.shape.push_back(static_cast<int64_t>(extent));
  }
  auto nbytes = dtype_bytes(dtype, numel);
  if (!nbytes) fail(ErrorCode::kInvalidNumpy, path, fmt::format("array `{}`: byte size overflows", record.name));
  if (*nbytes != available)
    fail(ErrorCode::kInvalidNumpy, path,
         fmt::format("array `{}`: shape {} of {} needs {} bytes but {} follow its header{}", record.name,
                     fmt::join(header.shape, "x"), header.descr, *nbytes, available,
                     *nbytes > available ? " (truncated?)" : ""));
  record.numel = numel;
  record.nbytes = record.storage_nbytes = *nbytes;
  if (header.fortran_order && record.shape.size() > 1) {  // column-major: the first index moves fastest
    int64_t step = 1;
    for (int64_t extent : record.shape) {
      record.stride.push_back(step);
      step *= std::max<int64_t>(extent, 1);
    }
  }
  return record;
}

bool looks_like_npy(std::span<const std::byte> bytes) {
  return bytes.size() >= kMagicSize && std::memcmp(bytes.data(), kNpyMagic, kMagicSize) == 0;
}

std::span<const std::byte> npy_head(const ByteSource& source, uint64_t offset, uint64_t size) {
  constexpr uint64_t kVersion = kMagicSize, kLength = kMagicSize + 2;  // where the version and the length lie
  std::span<const std::byte> preamble = source.view(offset, std::min<uint64_t>(size, kLength + 4));
  uint64_t head = preamble.size();  // a bad version, or a short file: read_npy_header names it from these
  auto major = preamble.size() > kVersion ? static_cast<uint8_t>(preamble[kVersion]) : 0;
  if (major == 1 && preamble.size() >= kLength + 2) head = kLength + 2 + read_le<uint16_t>(preamble, kLength);
  if ((major == 2 || major == 3) && preamble.size() == kLength + 4) {
    uint64_t length = read_le<uint32_t>(preamble, kLength);
    if (length <= kMaxNpyHeader) head = kLength + 4 + length;  // else refused before its bytes are read
  }
  return source.view(offset, std::min(size, head));
}

NpyHeader read_npy_header(std::span<const std::byte> bytes, const std::filesystem::path& path) {
  ByteCursor cursor(bytes, path, ErrorCode::kInvalidNumpy, "npy");
  if (!looks_like_npy(bytes)) cursor.fail("no \\x93NUMPY magic");
  cursor.skip(kMagicSize);
  cursor.mark();
  auto major = cursor.le<uint8_t>();
  cursor.le<uint8_t>();
  if (major < 1 || major > 3) cursor.fail(fmt::format("unknown format version {}", major));
  uint64_t length = major == 1 ? cursor.le<uint16_t>() : cursor.le<uint32_t>();
  if (length > kMaxNpyHeader) cursor.fail(fmt::format("header of {} bytes", length));
  std::string_view dict = cursor.text(length);
  NpyHeader header{.data_offset = cursor.position()};
  header.descr = value_of(dict, "descr");
  if (header.descr.empty()) cursor.fail("header without a 'descr'");
  std::string fortran = value_of(dict, "fortran_order");
  if (fortran != "True" && fortran != "False") cursor.fail("header without a True/False 'fortran_order'");
  header.fortran_order = fortran == "True";
  header.shape = parse_shape(value_of(dict, "shape"), path);
  header.holds_objects = !plain_descr(header.descr);
  return header;
}

std::optional<NpyHeader> npy_header_or_why(std::span<const std::byte> head, const std::string& where,
                                           PickleVisitor& visitor) {
  try {
    return read_npy_header(head, where);
  } catch (const Error& e) {
    visitor.unverified(where, e.what());
    return std::nullopt;
  }
}

}  // namespace precdetect
