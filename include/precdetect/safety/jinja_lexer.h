#pragma once
/// Jinja2's lexer (jinja2/lexer.py) with its default delimiters, as the renderers of chat templates configure it:
/// `{{ }}`, `{% %}`, `{# #}`, whitespace control `-`/`+`, `{% raw %}`, no line statements. Template text, comments
/// and raw blocks yield no tokens: the judge reads only what runs.

#include <cstddef>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace precdetect::jinja {

enum class TokenKind {
  kVariableBegin,  ///< `{{`
  kVariableEnd,    ///< `}}`
  kBlockBegin,     ///< `{%`
  kBlockEnd,       ///< `%}`
  kName,
  kString,
  kNumber,
  kOperator,  ///< one of jinja2's operators: `+ - / // * % ** ~ [ ] ( ) { } == != > >= < <= = . : | , ;`
  kEnd,       ///< the end of the template
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  /// A name or operator as written; a string's value decoded as jinja2 decodes it (Python's unicode-escape); a
  /// number as written.
  std::string value;
  size_t offset = 0;  ///< in the template's bytes
  size_t end = 0;
  bool unreadable = false;  ///< a string with a `\N{...}` escape: its value is not known here
};

/// What jinja2 would refuse to lex or parse, and where (a byte offset in the template). Thrown by tokenize and by
/// the parser's internals; parse_template (jinja_parser.h) catches it and returns it.
struct SyntaxError : std::exception {
  SyntaxError(std::string message, size_t offset) : message(std::move(message)), offset(offset) {}
  const char* what() const noexcept override { return message.c_str(); }
  std::string message;
  size_t offset = 0;
};

/// The template's tokens, ending with kEnd. Throws SyntaxError where jinja2's lexer raises TemplateSyntaxError (an
/// unclosed comment, raw block or string, an unknown character, unbalanced brackets, a bad escape, invalid UTF-8).
/// Linear in the template's size; never recurses.
std::vector<Token> tokenize(std::string_view source);

}  // namespace precdetect::jinja
