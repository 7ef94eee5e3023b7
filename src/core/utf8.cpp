#include "precdetect/core/utf8.h"

namespace precdetect {

std::optional<Utf8Char> decode_utf8(std::string_view text, size_t at) {
  if (at >= text.size()) return std::nullopt;
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  uint32_t lead = byte(at);
  if (lead < 0x80) return Utf8Char{lead, 1};
  // 0x80-0xC1 start no shortest sequence (a continuation byte, or an overlong two-byte form); 0xF5 and above none
  // at most U+10FFFF.
  size_t length = lead >= 0xF5 ? 0 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
  if (length == 0 || length > text.size() - at) return std::nullopt;
  uint32_t code_point = lead & (0x7F >> length);
  for (size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) return std::nullopt;
    code_point = (code_point << 6) | (byte(at + i) & 0x3F);
  }
  constexpr uint32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
  bool shortest = code_point >= kLeast[length];
  bool scalar = code_point <= 0x10FFFF && (code_point < 0xD800 || code_point > 0xDFFF);
  if (!shortest || !scalar) return std::nullopt;
  return Utf8Char{code_point, length};
}

bool is_utf8(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    std::optional<Utf8Char> next = decode_utf8(text, at);
    if (!next) return false;
    at += next->length;
  }
  return true;
}

void append_utf8(std::string& out, uint32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

}  // namespace precdetect
