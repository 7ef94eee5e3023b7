#include "precdetect/load/flax/msgpack.h"

#include <fmt/format.h>

#include <bit>

#include "precdetect/load/source/source_cursor.h"

namespace precdetect::msgpack {
namespace {

/// Big-endian unsigned of N bytes (msgpack's byte order).
template <typename T>
T read_be(ByteCursor& cursor) {
  auto bytes = cursor.bytes(sizeof(T));
  T value = 0;
  for (std::byte b : bytes) value = static_cast<T>((value << 8) | static_cast<T>(b));
  return value;
}

class Reader {
 public:
  Reader(const ByteSource& source, uint64_t offset, uint64_t size)
      : cursor_(source_cursor(source, offset, size, ErrorCode::kInvalidMsgpack, "msgpack")) {}

  Value whole() {
    Value value = next(0);
    if (!cursor_.done())
      cursor_.fail_at(cursor_.offset(), fmt::format("{} bytes after the value", cursor_.remaining()));
    return value;
  }

 private:
  Value next(int depth) {
    cursor_.mark();
    if (depth > kMaxDepth) cursor_.fail(fmt::format("values nest more than {} deep", kMaxDepth));
    if (++values_ > kMaxValues) cursor_.fail(fmt::format("more than {} values", kMaxValues));
    auto tag = cursor_.le<uint8_t>();
    if (tag <= 0x7f) return {uint64_t{tag}};
    if (tag >= 0xe0) return {int64_t{static_cast<int8_t>(tag)}};
    if (tag <= 0x8f) return map(tag & 0x0f, depth);
    if (tag <= 0x9f) return array(tag & 0x0f, depth);
    if (tag <= 0xbf) return text(tag & 0x1f);
    switch (tag) {
      case 0xc0:
        return {Nil{}};
      case 0xc2:
        return {false};
      case 0xc3:
        return {true};
      case 0xc4:
        return binary(read_be<uint8_t>(cursor_));
      case 0xc5:
        return binary(read_be<uint16_t>(cursor_));
      case 0xc6:
        return binary(read_be<uint32_t>(cursor_));
      case 0xc7:
        return extension(read_be<uint8_t>(cursor_));
      case 0xc8:
        return extension(read_be<uint16_t>(cursor_));
      case 0xc9:
        return extension(read_be<uint32_t>(cursor_));
      case 0xca:
        return {double{std::bit_cast<float>(read_be<uint32_t>(cursor_))}};
      case 0xcb:
        return {std::bit_cast<double>(read_be<uint64_t>(cursor_))};
      case 0xcc:
        return {uint64_t{read_be<uint8_t>(cursor_)}};
      case 0xcd:
        return {uint64_t{read_be<uint16_t>(cursor_)}};
      case 0xce:
        return {uint64_t{read_be<uint32_t>(cursor_)}};
      case 0xcf:
        return {read_be<uint64_t>(cursor_)};
      case 0xd0:
        return {int64_t{static_cast<int8_t>(read_be<uint8_t>(cursor_))}};
      case 0xd1:
        return {int64_t{static_cast<int16_t>(read_be<uint16_t>(cursor_))}};
      case 0xd2:
        return {int64_t{static_cast<int32_t>(read_be<uint32_t>(cursor_))}};
      case 0xd3:
        return {static_cast<int64_t>(read_be<uint64_t>(cursor_))};
      case 0xd4:
        return extension(1);
      case 0xd5:
        return extension(2);
      case 0xd6:
        return extension(4);
      case 0xd7:
        return extension(8);
      case 0xd8:
        return extension(16);
      case 0xd9:
        return text(read_be<uint8_t>(cursor_));
      case 0xda:
        return text(read_be<uint16_t>(cursor_));
      case 0xdb:
        return text(read_be<uint32_t>(cursor_));
      case 0xdc:
        return array(read_be<uint16_t>(cursor_), depth);
      case 0xdd:
        return array(read_be<uint32_t>(cursor_), depth);
      case 0xde:
        return map(read_be<uint16_t>(cursor_), depth);
      case 0xdf:
        return map(read_be<uint32_t>(cursor_), depth);
      default:
        cursor_.fail("the reserved byte 0xc1");
    }
  }

  Value text(uint64_t length) {
    auto raw = cursor_.text(length);
    return {raw};
  }

  Value binary(uint64_t length) {
    uint64_t offset = cursor_.offset();
    cursor_.skip(length);
    return {Binary{.offset = offset, .size = length}};
  }

  Value extension(uint64_t length) {
    auto type = static_cast<int8_t>(cursor_.le<uint8_t>());
    uint64_t offset = cursor_.offset();
    cursor_.skip(length);
    return {Extension{.type = type, .offset = offset, .size = length}};
  }

  /// Every value takes at least a byte: a count past the bytes left is a lie, refused before it is allocated.
  void check_count(uint64_t count, uint64_t per_item) {
    if (count > cursor_.remaining() / per_item)
      cursor_.fail(fmt::format("{} items declared, more than the {} bytes left can hold", count, cursor_.remaining()));
  }

  Value array(uint64_t count, int depth) {
    check_count(count, 1);
    Array items;
    items.reserve(count);
    for (uint64_t i = 0; i < count; ++i) items.push_back(next(depth + 1));
    return {std::move(items)};
  }

  Value map(uint64_t count, int depth) {
    check_count(count, 2);
    Map entries;
    entries.keys.reserve(count);
    entries.values.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      entries.keys.push_back(next(depth + 1));
      entries.values.push_back(next(depth + 1));
    }
    return {std::move(entries)};
  }

  ByteCursor cursor_;
  uint64_t values_ = 0;
};

}  // namespace

std::optional<uint64_t> Value::unsigned_value() const {
  if (const auto* u = std::get_if<uint64_t>(&data)) return *u;
  if (const auto* i = std::get_if<int64_t>(&data); i && *i >= 0) return static_cast<uint64_t>(*i);
  return std::nullopt;
}

const Value* Value::find(std::string_view key) const {
  const Map* entries = map();
  if (!entries) return nullptr;
  for (size_t i = 0; i < entries->keys.size(); ++i)
    if (const auto* text = entries->keys[i].text(); text && *text == key) return &entries->values[i];
  return nullptr;
}

Value read(const ByteSource& source, uint64_t offset, uint64_t size) { return Reader(source, offset, size).whole(); }

}  // namespace precdetect::msgpack
