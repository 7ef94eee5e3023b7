#include "precdetect/safety/jinja_text.h"

#include <fmt/format.h>

#include <cstdint>
#include <utility>

#include "precdetect/core/utf8.h"
#include "precdetect/safety/jinja_lexer.h"

namespace precdetect::jinja {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_octal(char c) { return c >= '0' && c <= '7'; }
bool is_binary(char c) { return c == '0' || c == '1'; }
bool is_zero(char c) { return c == '0'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
char at(std::string_view text, size_t p) { return p < text.size() ? text[p] : '\0'; }

// Python's one-letter escapes and what they stand for.
constexpr std::pair<char, char> kSimpleEscapes[] = {{'\\', '\\'}, {'\'', '\''}, {'"', '"'},  {'a', '\a'}, {'b', '\b'},
                                                    {'f', '\f'},  {'n', '\n'},  {'r', '\r'}, {'t', '\t'}, {'v', '\v'}};

/// `(\d+_)*\d+` at `p`: the end of the match, or `p` when there is none.
size_t digits(std::string_view text, size_t p) {
  size_t q = p;
  while (is_digit(at(text, q)) || (q > p && at(text, q) == '_' && is_digit(at(text, q + 1)))) ++q;
  return q;
}

/// `e[+\-]?(\d+_)*\d+` at `p`: its end, or `p`.
size_t exponent(std::string_view text, size_t p) {
  if (lower(at(text, p)) != 'e') return p;
  size_t q = p + 1;
  if (at(text, q) == '+' || at(text, q) == '-') ++q;
  size_t end = digits(text, q);
  return end == q ? p : end;
}

/// `(_?[class])+` at `p`: the end of the match, or `p`.
template <typename Class>
size_t separated(std::string_view text, size_t p, Class in_class) {
  size_t q = p;
  for (;;) {
    if (at(text, q) == '_' && in_class(at(text, q + 1))) {
      q += 2;
    } else if (in_class(at(text, q))) {
      ++q;
    } else {
      return q;
    }
  }
}

/// `\xhh`, `\uhhhh`, `\Uhhhhhhhh` after the backslash at `p`: the code point; throws where the codec does.
uint32_t hex_escape(std::string_view body, size_t p, size_t offset) {
  size_t count = body[p + 1] == 'x' ? 2 : body[p + 1] == 'u' ? 4 : 8;
  uint32_t cp = 0;
  for (size_t i = 0; i < count; ++i) {
    char c = at(body, p + 2 + i);
    if (!is_hex(c)) throw SyntaxError{fmt::format("truncated \\{} escape", body[p + 1]), offset + p};
    cp = cp * 16 + static_cast<uint32_t>(is_digit(c) ? c - '0' : lower(c) - 'a' + 10);
  }
  if (cp > 0x10FFFF) throw SyntaxError{"illegal Unicode character", offset + p};
  return cp;
}

/// What backslashreplace writes for a character beyond ASCII, less its backslash (`xe9`, `u20ac`).
std::string backslash_form(uint32_t cp) {
  if (cp < 0x100) return fmt::format("x{:02x}", cp);
  if (cp < 0x10000) return fmt::format("u{:04x}", cp);
  return fmt::format("U{:08x}", cp);
}

/// One escape at `p` (a backslash), appended to `out`; returns the index after it.
size_t escape(std::string_view body, size_t p, size_t offset, DecodedString& out) {
  char c = body[p + 1];
  if (c == '\n') return p + 2;  // a line continuation
  for (auto [letter, value] : kSimpleEscapes) {
    if (c != letter) continue;
    out.value += value;
    return p + 2;
  }
  switch (c) {
    case 'x':
    case 'u':
    case 'U':
      append_utf8(out.value, hex_escape(body, p, offset));
      return p + (c == 'x' ? 4 : c == 'u' ? 6 : 10);
    case 'N': {
      size_t close = body.find('}', p);
      if (at(body, p + 2) != '{' || close == std::string_view::npos)
        throw SyntaxError{"malformed \\N character escape", offset + p};
      out.unreadable = true;
      out.value += "\xEF\xBF\xBD";  // U+FFFD stands for the character
      return close + 1;
    }
    default:
      break;
  }
  if (is_octal(c)) {
    uint32_t cp = 0;
    size_t q = p + 1;
    for (; q < p + 4 && is_octal(at(body, q)); ++q) cp = cp * 8 + static_cast<uint32_t>(body[q] - '0');
    append_utf8(out.value, cp);
    return q;
  }
  if (std::optional<Utf8Char> escaped = decode_utf8(body, p + 1); escaped && escaped->length > 1) {
    // `\é` became `\\xe9`: a backslash, then the escape's text as it is
    out.value += '\\';
    out.value += backslash_form(escaped->code_point);
    return p + 1 + escaped->length;
  }
  out.value += '\\';  // an unknown escape keeps its backslash
  out.value += c;
  return p + 2;
}

}  // namespace

size_t python_space_width(std::string_view text, size_t p) {
  std::optional<Utf8Char> c = decode_utf8(text, p);
  if (!c) return 0;
  uint32_t cp = c->code_point;
  bool space = (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
               (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
               cp == 0x3000;
  return space ? c->length : 0;
}

size_t float_length(std::string_view text, size_t p) {
  if (p > 0 && text[p - 1] == '.') return 0;
  size_t whole = digits(text, p);
  if (whole == p) return 0;
  size_t fraction = at(text, whole) == '.' ? digits(text, whole + 1) : whole + 1;
  bool has_fraction = fraction > whole + 1;
  if (has_fraction && exponent(text, fraction) > fraction) return exponent(text, fraction) - p;
  if (exponent(text, whole) > whole) return exponent(text, whole) - p;
  return has_fraction ? fraction - p : 0;
}

size_t integer_length(std::string_view text, size_t p) {
  char c = at(text, p);
  if (c == '0') {
    char base = lower(at(text, p + 1));
    size_t end = base == 'b'   ? separated(text, p + 2, is_binary)
                 : base == 'o' ? separated(text, p + 2, is_octal)
                 : base == 'x' ? separated(text, p + 2, is_hex)
                               : p + 2;
    if (end > p + 2) return end - p;
    return separated(text, p + 1, is_zero) - p;
  }
  if (c >= '1' && c <= '9') return separated(text, p + 1, is_digit) - p;
  return 0;
}

DecodedString decode_string(std::string_view body, size_t offset) {
  DecodedString out;
  out.value.reserve(body.size());
  for (size_t p = 0; p < body.size();) {
    if (body[p] == '\r') {  // lexer.py normalizes every newline to \n first
      out.value += '\n';
      p += at(body, p + 1) == '\n' ? 2 : 1;
    } else if (body[p] == '\\' && p + 1 < body.size() && body[p + 1] == '\r') {
      p += at(body, p + 2) == '\n' ? 3 : 2;  // a line continuation written with \r\n or \r
    } else if (body[p] == '\\' && p + 1 < body.size()) {
      p = escape(body, p, offset, out);
    } else {
      out.value += body[p++];
    }
  }
  return out;
}

}  // namespace precdetect::jinja
