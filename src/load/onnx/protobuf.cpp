#include "precdetect/load/onnx/protobuf.h"

#include <fmt/format.h>

namespace precdetect {

uint64_t read_varint(ByteCursor& cursor) {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    auto byte = cursor.le<uint8_t>();
    value |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) return value;
  }
  cursor.fail("a varint longer than 10 bytes");
}

std::optional<ProtoField> ProtoReader::next() {
  if (cursor_.done()) return std::nullopt;
  cursor_.mark();
  uint64_t tag = read_varint(cursor_);
  ProtoField field{.number = static_cast<uint32_t>(tag >> 3), .wire = static_cast<WireType>(tag & 7)};
  // Field numbers are 1 to 2^29 - 1 (protobuf's limit): a larger tag is no field.
  if (field.number == 0 || (tag >> 3) >= (1U << 29)) cursor_.fail(fmt::format("field number {}", tag >> 3));
  switch (field.wire) {
    case WireType::kVarint:
      field.value = read_varint(cursor_);
      break;
    case WireType::kFixed64:
      field.value = cursor_.le<uint64_t>();
      break;
    case WireType::kFixed32:
      field.value = cursor_.le<uint32_t>();
      break;
    case WireType::kBytes: {
      uint64_t length = read_varint(cursor_);
      if (length > cursor_.remaining())
        cursor_.fail(fmt::format("field {}: {} bytes run past the end of its message ({} left)", field.number, length,
                                 cursor_.remaining()));
      field.offset = cursor_.offset();
      field.size = length;
      cursor_.skip(length);  // viewed only when asked for: a raw_data's bytes are never touched here
      break;
    }
    default:
      cursor_.fail(fmt::format("field {}: wire type {}, which ONNX never writes", field.number, tag & 7));
  }
  return field;
}

std::string_view field_text(const ProtoField& field, const ProtoReader& reader) {
  if (field.wire != WireType::kBytes) reader.fail(fmt::format("field {} is not a string", field.number));
  std::span<const std::byte> text = reader.payload(field);
  return {reinterpret_cast<const char*>(text.data()), text.size()};
}

uint64_t field_varint(const ProtoField& field, const ProtoReader& reader) {
  if (field.wire != WireType::kVarint) reader.fail(fmt::format("field {} is not an integer", field.number));
  return field.value;
}

}  // namespace precdetect
