#pragma once
/// The character-level rules of jinja2's lexer (jinja2/lexer.py), which runs Python regular expressions over a
/// Python str: what `\s` matches, the number literals, and string escapes as Python's unicode-escape codec decodes
/// them. Offsets are byte offsets into the template's UTF-8 text.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace precdetect::jinja {

/// The width in bytes of the character at `p` when Python's `str.isspace()` holds for it (what `\s` matches in a
/// str pattern: ASCII whitespace, U+001C-U+001F, U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F,
/// U+205F, U+3000), else 0.
size_t python_space_width(std::string_view text, size_t p);

/// The length of lexer.py's float_re match at `p` (`1.5`, `1e3`, `1_000.5E-2`; never right after a `.`), or 0.
size_t float_length(std::string_view text, size_t p);

/// The length of lexer.py's integer_re match at `p` (`0b1`, `0o7`, `0xff`, `1_000`, `0`), or 0.
size_t integer_length(std::string_view text, size_t p);

struct DecodedString {
  std::string value;        ///< UTF-8
  bool unreadable = false;  ///< it holds a `\N{name}` escape, whose character is not looked up here
};

/// A string literal's body (between its quotes, at `offset` in the template) decoded as lexer.py decodes it:
/// newlines normalized, then `.encode("ascii", "backslashreplace").decode("unicode-escape")`. Throws SyntaxError
/// (jinja_lexer.h) where that codec raises (a truncated `\x`, `\u` or `\U` escape, a code point past U+10FFFF).
DecodedString decode_string(std::string_view body, size_t offset);

}  // namespace precdetect::jinja
