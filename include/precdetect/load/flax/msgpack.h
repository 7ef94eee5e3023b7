#pragma once
/// MessagePack (github.com/msgpack/msgpack/blob/master/spec.md), read through a ByteCursor into a tree whose
/// strings are views of the bytes read and whose binaries and extension payloads are places in the file, stepped
/// over unread: a Flax checkpoint's arrays are never viewed while its tree is read, and a remote one's are never
/// fetched for it (load/source/source_cursor.h). Ours rather than msgpack-c's: its unpacker copies or
/// zone-allocates what it reads, and a reader of a few hundred lines with our limits is one a fuzzer covers whole.

#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

#include "precdetect/load/source/byte_source.h"

namespace precdetect::msgpack {

struct Value;
using Array = std::vector<Value>;
/// In file order; keys are not checked for uniqueness here. Two lists rather than a list of pairs: a pair of an
/// incomplete Value cannot be an alternative of Value's own variant.
struct Map {
  std::vector<Value> keys;
  std::vector<Value> values;  ///< values[i] is keys[i]'s
};
struct Nil {};
/// Bytes [offset, offset + size) of the file, not read.
struct Binary {
  uint64_t offset = 0;
  uint64_t size = 0;
};
/// An extension's payload, bytes [offset, offset + size) of the file, not read.
struct Extension {
  int8_t type = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct Value {
  std::variant<Nil, bool, int64_t, uint64_t, double, std::string_view, Binary, Extension, Array, Map> data;

  const Map* map() const { return std::get_if<Map>(&data); }
  const Array* array() const { return std::get_if<Array>(&data); }
  const std::string_view* text() const { return std::get_if<std::string_view>(&data); }
  /// A non-negative integer's value.
  std::optional<uint64_t> unsigned_value() const;
  /// The value for `key` in a map whose keys are strings; nullptr when absent or not a map.
  const Value* find(std::string_view key) const;
};

/// Limits that keep a hostile file from costing more than its size: nesting (every level is a recursion) and
/// values in all (every value is a tree node, a few dozen bytes).
constexpr int kMaxDepth = 64;
constexpr uint64_t kMaxValues = 1 << 22;

/// Reads exactly one value filling bytes [offset, offset + size) of `source`; its strings are views of the
/// source's bytes. Throws Error(kInvalidMsgpack) naming the path and the offset of the damage: truncation, a
/// reserved byte (0xc1), nesting past kMaxDepth, more than kMaxValues values, lengths past the end, or bytes after
/// the value; Error(kOffsetPastEnd) when the range is not inside the source.
Value read(const ByteSource& source, uint64_t offset, uint64_t size);

}  // namespace precdetect::msgpack
