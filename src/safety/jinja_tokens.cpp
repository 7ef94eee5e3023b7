#include "precdetect/safety/jinja_tokens.h"

#include <fmt/format.h>

namespace precdetect::jinja {

bool TokenStream::skip_op(std::string_view op) {
  if (!is_op(op)) return false;
  next();
  return true;
}

bool TokenStream::skip_name(std::string_view name) {
  if (!is_name(name)) return false;
  next();
  return true;
}

Token TokenStream::expect_op(std::string_view op) {
  if (!is_op(op)) fail(fmt::format("expected '{}', got '{}'", op, describe(current())));
  Token token = current();
  next();
  return token;
}

Token TokenStream::expect_name(std::string_view name) {
  if (!is(TokenKind::kName) || (!name.empty() && current().value != name))
    fail(fmt::format("expected '{}', got '{}'", name.empty() ? "name" : name, describe(current())));
  Token token = current();
  next();
  return token;
}

Token TokenStream::expect(TokenKind kind, std::string_view what) {
  if (!is(kind)) fail(fmt::format("expected {}, got '{}'", what, describe(current())));
  Token token = current();
  next();
  return token;
}

void TokenStream::fail(std::string message) const { throw SyntaxError{std::move(message), current().offset}; }

TokenStream::Nest::Nest(TokenStream& stream) : stream_(stream) {
  if (++stream_.depth_ > kMaxNesting) {
    --stream_.depth_;
    stream_.fail(fmt::format("nested more than {} deep", kMaxNesting));
  }
}

std::string describe(const Token& token) {
  switch (token.kind) {
    case TokenKind::kVariableBegin:
      return "begin of print statement";
    case TokenKind::kVariableEnd:
      return "end of print statement";
    case TokenKind::kBlockBegin:
      return "begin of statement block";
    case TokenKind::kBlockEnd:
      return "end of statement block";
    case TokenKind::kEnd:
      return "end of template";
    case TokenKind::kName:
    case TokenKind::kString:
    case TokenKind::kNumber:
    case TokenKind::kOperator:
      break;
  }
  return token.kind == TokenKind::kString ? "string" : token.value;
}

}  // namespace precdetect::jinja
