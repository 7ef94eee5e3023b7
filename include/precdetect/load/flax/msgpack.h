#pragma once
/// MessagePack (github.com/msgpack/msgpack/blob/master/spec.md), read into a tree whose strings, binaries and
/// extension payloads are views of the input: nothing is copied, so a Flax checkpoint's arrays stay in the
/// mapping. Ours rather than msgpack-c's: its unpacker copies or zone-allocates what it reads, and a reader of
/// a few hundred lines with our limits is one a fuzzer covers whole.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

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
struct Binary {
  std::span<const std::byte> bytes;
};
struct Extension {
  int8_t type = 0;
  std::span<const std::byte> bytes;
  uint64_t offset = 0;  ///< of the payload's first byte, in the bytes read (and so in the file)
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

/// Reads exactly one value filling `bytes` (at offset `base` of `path`). Throws Error(kInvalidMsgpack) naming
/// the path and the offset of the damage: truncation, a reserved byte (0xc1), nesting past kMaxDepth, more than
/// kMaxValues values, lengths past the end, or bytes after the value.
Value read(std::span<const std::byte> bytes, const std::filesystem::path& path, uint64_t base = 0);

}  // namespace precdetect::msgpack
