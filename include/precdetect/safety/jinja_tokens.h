#pragma once
/// The parser's cursor over a template's tokens (jinja2/lexer.py's TokenStream), and the bound on how deeply the
/// grammar may recurse.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "precdetect/safety/jinja_lexer.h"

namespace precdetect::jinja {

/// How deeply statements, brackets and expressions may nest (jinja2 compiles a template to Python, whose own
/// parser stops at 200 nested brackets); deeper is a SyntaxError here. Expression trees built by loops
/// (`a + b + c ...`, `x.a.b.c ...`) are held to the same depth.
constexpr size_t kMaxNesting = 100;

class TokenStream {
 public:
  /// `tokens` as tokenize returns them, ending with kEnd.
  explicit TokenStream(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  const Token& current() const { return tokens_[pos_]; }
  /// The token after the current one (kEnd at the end).
  const Token& look() const { return tokens_[pos_ + 1 < tokens_.size() ? pos_ + 1 : pos_]; }
  void next() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  /// The end of the token before the current one: where an expression that ends here ends.
  size_t last_end() const { return pos_ > 0 ? tokens_[pos_ - 1].end : 0; }

  bool is(TokenKind kind) const { return current().kind == kind; }
  bool is_op(std::string_view op) const { return is(TokenKind::kOperator) && current().value == op; }
  bool is_name(std::string_view name) const { return is(TokenKind::kName) && current().value == name; }
  bool skip_op(std::string_view op);
  bool skip_name(std::string_view name);
  /// The current token, which must be `op` (or `name`; any name when empty), then the stream moves past it;
  /// throws SyntaxError otherwise.
  Token expect_op(std::string_view op);
  Token expect_name(std::string_view name = {});
  Token expect(TokenKind kind, std::string_view what);
  [[noreturn]] void fail(std::string message) const;

  /// One level of nesting while alive; throws SyntaxError past kMaxNesting.
  class Nest {
   public:
    explicit Nest(TokenStream& stream);
    ~Nest() { --stream_.depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    TokenStream& stream_;
  };

 private:
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  size_t depth_ = 0;
};

/// How the current token reads in an error message: a name, an operator, "end of template".
std::string describe(const Token& token);

}  // namespace precdetect::jinja
