#pragma once
/// UTF-8, in one place: which bytes are strict UTF-8 (a safetensors header, a chat template, text written into XML)
/// and code points written as UTF-8 (what a Jinja2 escape `\u00e9` and an XML character reference `&#233;` decode
/// to).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace precdetect {

/// One character read from UTF-8 text: its code point, and the bytes it takes.
struct Utf8Char {
  uint32_t code_point = 0;
  size_t length = 0;  ///< 1 to 4
};

/// The character at `text[at]` when its bytes are strict UTF-8 (RFC 3629, as Python's decoder reads it): the
/// shortest form, no surrogate, at most U+10FFFF. nullopt for any other bytes, a sequence cut short by the text's
/// end, or `at` at or past the end.
std::optional<Utf8Char> decode_utf8(std::string_view text, size_t at);

/// Whether the whole text is strict UTF-8 (decode_utf8 at every character).
bool is_utf8(std::string_view text);

/// Appends `code_point` (at most 0x10FFFF) to `out` in UTF-8, in one to four bytes. Surrogates are written as their
/// three bytes, as Python's str may hold them; a caller that must refuse them checks before.
void append_utf8(std::string& out, uint32_t code_point);

}  // namespace precdetect
