#pragma once
/// Protocol Buffers' wire format (protobuf.dev/programming-guides/encoding), read-only and bounds-checked, for the
/// ONNX reader. Why not libprotobuf: it copies every `bytes` field (an ONNX tensor's raw_data) into a std::string,
/// doubling the memory of a multi-GB model, and refuses messages over 2 GiB, while ONNX's raw_data and external data
/// can be analyzed where they lie in the mapping. The reader walks a message's fields in place through a
/// source_cursor, giving each length-delimited payload as its place in the file, viewed only when asked for: a
/// raw_data of gigabytes is stepped over, never touched (a remote model's is not fetched to find its neighbours);
/// nothing is allocated on a file's say-so.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string_view>

#include "precdetect/core/byte_cursor.h"
#include "precdetect/load/source/byte_source.h"
#include "precdetect/load/source/source_cursor.h"

namespace precdetect {

/// How a field's value is encoded: varint (int32, int64, enums), 8 bytes, length-delimited (strings, bytes,
/// messages, packed repeated scalars), 4 bytes. The deprecated groups (3, 4) are refused.
enum class WireType : uint8_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

struct ProtoField {
  uint32_t number = 0;
  WireType wire = WireType::kVarint;
  uint64_t value = 0;   ///< kVarint's value, kFixed64's or kFixed32's bits
  uint64_t offset = 0;  ///< where kBytes's payload starts in the file
  uint64_t size = 0;    ///< kBytes's payload's length (ProtoReader::payload views it)
};

/// One base-128 varint at the cursor, at most 10 bytes. Throws the cursor's error when it is longer or truncated.
uint64_t read_varint(ByteCursor& cursor);

/// The fields of one encoded message, in the order they are stored.
class ProtoReader {
 public:
  /// The message at [offset, offset + size) of `source` (which must outlive the reader). Errors are
  /// Error(kInvalidOnnx) "<path>: invalid ONNX at offset N: ...".
  ProtoReader(const ByteSource& source, uint64_t offset, uint64_t size)
      : source_(source), cursor_(source_cursor(source, offset, size, ErrorCode::kInvalidOnnx, "ONNX")) {}
  /// The message a kBytes field of `source` holds.
  ProtoReader(const ByteSource& source, const ProtoField& field) : ProtoReader(source, field.offset, field.size) {}

  /// The next field, or nullopt at the message's end. Throws for a truncated field, a length past the message's
  /// end, a field number 0 or a wire type other than 0, 1, 2 and 5.
  std::optional<ProtoField> next();
  /// The payload of a kBytes field this reader gave, viewed now.
  std::span<const std::byte> payload(const ProtoField& field) const { return source_.view(field.offset, field.size); }
  /// Throws Error(kInvalidOnnx) at the field last read.
  [[noreturn]] void fail(std::string_view what) const { cursor_.fail(what); }

 private:
  const ByteSource& source_;
  ByteCursor cursor_;
};

/// The text of a kBytes field (a string); throws for another wire type.
std::string_view field_text(const ProtoField& field, const ProtoReader& reader);
/// The value of a kVarint field; throws for another wire type.
uint64_t field_varint(const ProtoField& field, const ProtoReader& reader);

/// Calls `item(value)` for every value of the repeated scalar field `number` of the message at [offset, offset +
/// size) of `source`, in order, whether the writer packed them (one or several kBytes runs) or wrote each as a
/// field of `wire` (kVarint, kFixed32, kFixed64); returns how many there were. Throws Error(kInvalidOnnx) for a
/// value of another wire type, or a packed run that is not whole values.
template <typename Item>
uint64_t for_each_value(const ByteSource& source, uint64_t offset, uint64_t size, uint32_t number, WireType wire,
                        Item item) {
  ProtoReader reader(source, offset, size);
  uint64_t count = 0;
  while (std::optional<ProtoField> field = reader.next()) {
    if (field->number != number) continue;
    if (field->wire == wire) {
      item(field->value);
      ++count;
      continue;
    }
    if (field->wire != WireType::kBytes) reader.fail("a repeated value of the wrong wire type");
    ByteCursor packed = source_cursor(source, field->offset, field->size, ErrorCode::kInvalidOnnx, "ONNX");
    while (!packed.done()) {
      packed.mark();
      if (wire == WireType::kVarint) item(read_varint(packed));
      if (wire == WireType::kFixed32) item(packed.le<uint32_t>());
      if (wire == WireType::kFixed64) item(packed.le<uint64_t>());
      ++count;
    }
  }
  return count;
}

}  // namespace precdetect
