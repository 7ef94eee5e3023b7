#include "precdetect/safety/jinja_lexer.h"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <optional>

#include "precdetect/core/utf8.h"
#include "precdetect/safety/jinja_text.h"

namespace precdetect::jinja {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

// Longest first, as lexer.py's operator_re sorts them.
constexpr std::array<std::string_view, 26> kOperators = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/",
                                                         "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                                         ">",  "<",  "=",  ".",  ":",  "|",  ",", ";"};

/// Tokenizes one template; `pos_` walks the bytes, `balance_` holds the brackets open in the current tag.
class Lexer {
 public:
  explicit Lexer(std::string_view source) : source_(source) {}

  std::vector<Token> run() {
    while (pos_ < source_.size()) {
      if (!data()) break;
    }
    tokens_.push_back({.kind = TokenKind::kEnd, .offset = source_.size(), .end = source_.size()});
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void fail(std::string message, size_t at) const { throw SyntaxError{std::move(message), at}; }

  bool at(size_t p, std::string_view text) const { return source_.substr(p, text.size()) == text; }

  /// Template text up to the next tag, then the tag; false at the end of the template.
  bool data() {
    size_t open = pos_;
    for (;; ++open) {
      open = source_.find('{', open);
      if (open == std::string_view::npos || open + 1 >= source_.size()) return false;
      char kind = source_[open + 1];
      if (kind == '{' || kind == '%' || kind == '#') break;
    }
    if (source_[open + 1] == '#') return comment(open);
    if (source_[open + 1] == '%' && raw(open)) return true;
    bool block = source_[open + 1] == '%';
    size_t after = open + 2;
    if (after < source_.size() && (source_[after] == '-' || source_[after] == '+')) ++after;
    tokens_.push_back({.kind = block ? TokenKind::kBlockBegin : TokenKind::kVariableBegin,
                       .value = std::string(source_.substr(open, after - open)),
                       .offset = open,
                       .end = after});
    pos_ = after;
    tag(block);
    return true;
  }

  bool comment(size_t open) {
    size_t close = source_.find("#}", open + 2);
    if (close == std::string_view::npos) fail("missing end of comment tag", open);
    pos_ = close + 2;
    return true;
  }

  /// `{% raw %}...{% endraw %}` as lexer.py's raw rules read it; false when the tag at `open` is no raw tag.
  bool raw(size_t open) {
    std::optional<size_t> body = raw_tag(open, "raw", false);
    if (!body) return false;
    for (size_t p = source_.find("{%", *body); p != std::string_view::npos; p = source_.find("{%", p + 1)) {
      if (std::optional<size_t> after = raw_tag(p, "endraw", true)) {
        pos_ = *after;
        return true;
      }
    }
    fail("missing end of raw directive", open);
  }

  /// The end of `{%[-+]?\s*word\s*` then `-%}` or `%}` (and `+%}` where `plus_end`) at `p`.
  std::optional<size_t> raw_tag(size_t p, std::string_view word, bool plus_end) const {
    p += 2;
    if (p < source_.size() && (source_[p] == '-' || source_[p] == '+')) ++p;
    p = skip_space(p);
    if (!at(p, word)) return std::nullopt;
    p = skip_space(p + word.size());
    if (at(p, "%}")) return p + 2;
    if (at(p, "-%}")) return skip_space(p + 3);
    if (plus_end && at(p, "+%}")) return p + 3;
    return std::nullopt;
  }

  size_t skip_space(size_t p) const {
    while (p < source_.size()) {
      size_t width = python_space_width(source_, p);
      if (width == 0) break;
      p += width;
    }
    return p;
  }

  /// The tokens of one tag, through its end; at the end of the template the parser finds the tag unclosed.
  void tag(bool block) {
    while (pos_ < source_.size()) {
      if (balance_.empty() && tag_end(block)) return;
      size_t space = skip_space(pos_);
      if (space != pos_) {
        pos_ = space;
        continue;
      }
      token();
    }
  }

  bool tag_end(bool block) {
    std::string_view close = block ? "%}" : "}}";
    size_t p = pos_;
    if (block && at(p, "+%}")) {
      p += 3;
    } else if (at(p, "-") && at(p + 1, close)) {
      p = skip_space(p + 3);
    } else if (at(p, close)) {
      p += 2;
    } else {
      return false;
    }
    tokens_.push_back({.kind = block ? TokenKind::kBlockEnd : TokenKind::kVariableEnd, .offset = pos_, .end = p});
    pos_ = p;
    return true;
  }

  void token() {
    size_t start = pos_;
    char c = source_[pos_];
    if (size_t length = float_length(source_, pos_); length > 0) return push(TokenKind::kNumber, start + length);
    if (size_t length = integer_length(source_, pos_); length > 0) return push(TokenKind::kNumber, start + length);
    if (is_name_start(c) || static_cast<unsigned char>(c) >= 0x80) return name();
    if (c == '\'' || c == '"') return string();
    for (std::string_view op : kOperators) {
      if (!at(pos_, op)) continue;
      balance(op, start);
      return push(TokenKind::kOperator, start + op.size());
    }
    fail(fmt::format("unexpected char '{}'", c), start);
  }

  void push(TokenKind kind, size_t end) {
    tokens_.push_back(
        {.kind = kind, .value = std::string(source_.substr(pos_, end - pos_)), .offset = pos_, .end = end});
    pos_ = end;
  }

  /// lexer.py's balancing stack: a tag ends only where its brackets are closed.
  void balance(std::string_view op, size_t start) {
    if (op == "(" || op == "[" || op == "{") {
      balance_.push_back(op == "(" ? ')' : op == "[" ? ']' : '}');
    } else if (op == ")" || op == "]" || op == "}") {
      if (balance_.empty()) fail(fmt::format("unexpected '{}'", op), start);
      if (balance_.back() != op[0]) fail(fmt::format("unexpected '{}', expected '{}'", op, balance_.back()), start);
      balance_.pop_back();
    }
  }

  /// A Python identifier: ASCII letters, digits and `_`, and any character beyond ASCII that is not whitespace
  /// (jinja2 refuses those that are no identifier characters, so reading more of them as names changes nothing).
  void name() {
    size_t p = pos_;
    while (p < source_.size()) {
      char c = source_[p];
      if (is_name_start(c) || is_digit(c)) {
        ++p;
        continue;
      }
      if (static_cast<unsigned char>(c) < 0x80 || python_space_width(source_, p) > 0) break;
      std::optional<Utf8Char> character = decode_utf8(source_, p);
      if (!character) fail("invalid UTF-8", p);
      p += character->length;
    }
    push(TokenKind::kName, p);
  }

  void string() {
    char quote = source_[pos_];
    size_t p = pos_ + 1;
    while (p < source_.size() && source_[p] != quote) p += source_[p] == '\\' ? 2 : 1;
    if (p >= source_.size()) fail("unexpected char '" + std::string(1, quote) + "'", pos_);
    DecodedString decoded = decode_string(source_.substr(pos_ + 1, p - pos_ - 1), pos_ + 1);
    tokens_.push_back({.kind = TokenKind::kString,
                       .value = std::move(decoded.value),
                       .offset = pos_,
                       .end = p + 1,
                       .unreadable = decoded.unreadable});
    pos_ = p + 1;
  }

  std::string_view source_;
  size_t pos_ = 0;
  std::vector<char> balance_;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace precdetect::jinja
