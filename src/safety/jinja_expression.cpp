#include "precdetect/safety/jinja_expression.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace precdetect::jinja {
namespace {

constexpr std::array<std::string_view, 6> kCompareOperators = {"==", "!=", "<", "<=", ">", ">="};
constexpr std::array<std::string_view, 6> kConstants = {"true", "false", "True", "False", "none", "None"};

bool contains(const auto& list, std::string_view value) {
  return std::find(std::begin(list), std::end(list), value) != std::end(list);
}

/// Builds nodes from the stream, one function per rule of parser.py (parse_condexpr ... parse_primary).
class ExpressionParser {
 public:
  explicit ExpressionParser(TokenStream& stream) : s_(stream) {}

  Expr expression(bool with_condexpr) { return with_condexpr ? condexpr() : or_(); }

  Expr tuple(const TupleOptions& options) {
    size_t begin = s_.current().offset;
    std::vector<Expr> items;
    bool is_tuple = false;
    for (;;) {
      if (!items.empty()) s_.expect_op(",");
      if (tuple_end(options.extra_end)) break;
      items.push_back(options.simplified ? primary(options.with_namespace) : expression(options.with_condexpr));
      if (!s_.is_op(",")) break;
      is_tuple = true;
    }
    if (!is_tuple && !items.empty()) return std::move(items.front());
    if (!is_tuple && !options.explicit_parentheses)
      s_.fail(fmt::format("expected an expression, got '{}'", describe(s_.current())));
    return node(ExprKind::kTuple, begin, begin, std::move(items));
  }

  Expr filters(Expr subject, bool start_inline) {
    while (s_.is_op("|") || start_inline) {
      if (!start_inline) s_.next();
      start_inline = false;
      subject = named_call(ExprKind::kFilter, std::move(subject));
    }
    return subject;
  }

  Expr primary(bool with_namespace = false) {
    const Token& token = s_.current();
    size_t begin = token.offset;
    if (token.kind == TokenKind::kName) return name(with_namespace);
    if (token.kind == TokenKind::kString) return strings();
    if (token.kind == TokenKind::kNumber) {
      Expr number = node(ExprKind::kNumber, begin, begin, {}, token.value);
      s_.next();
      return finish(std::move(number));
    }
    if (s_.is_op("(") || s_.is_op("[") || s_.is_op("{")) return bracketed();
    s_.fail(fmt::format("unexpected '{}'", describe(token)));
  }

 private:
  /// `( )`, `[ ]` or `{ }`: one level of nesting.
  Expr bracketed() {
    TokenStream::Nest nest(s_);
    size_t begin = s_.current().offset;
    if (s_.skip_op("(")) {
      Expr inner = tuple({.explicit_parentheses = true});
      s_.expect_op(")");
      inner.begin = begin;
      inner.end = s_.last_end();
      return inner;
    }
    return display(s_.is_op("{"));
  }

  /// A node spanning from `begin` to the end of the last token read.
  Expr node(ExprKind kind, size_t begin, size_t offset, std::vector<Expr> children, std::string name = {}) {
    Expr expr{.kind = kind, .name = std::move(name), .offset = offset, .begin = begin, .children = std::move(children)};
    return finish(std::move(expr));
  }

  Expr finish(Expr expr) {
    expr.end = s_.last_end();
    for (const Expr& child : expr.children) expr.depth = std::max(expr.depth, child.depth + 1);
    if (expr.depth > kMaxNesting) throw SyntaxError{fmt::format("nested more than {} deep", kMaxNesting), expr.offset};
    return expr;
  }

  bool tuple_end(const std::vector<std::string_view>& extra_end) const {
    if (s_.is(TokenKind::kVariableEnd) || s_.is(TokenKind::kBlockEnd) || s_.is_op(")")) return true;
    return s_.is(TokenKind::kName) && contains(extra_end, s_.current().value);
  }

  Expr condexpr() {
    Expr body = or_();
    while (s_.skip_name("if")) {
      Expr test = or_();
      Expr orelse = s_.skip_name("else") ? nested_condexpr() : Expr{};
      size_t begin = body.begin;
      body = node(ExprKind::kCondition, begin, begin, {std::move(body), std::move(test), std::move(orelse)});
    }
    return body;
  }

  Expr nested_condexpr() {
    TokenStream::Nest nest(s_);
    return condexpr();
  }

  /// `left (word right)*` for and/or, left-associative.
  template <typename Operand>
  Expr chain(ExprKind kind, std::string_view word, Operand operand) {
    Expr left = (this->*operand)();
    while (s_.skip_name(word)) {
      Expr right = (this->*operand)();
      size_t begin = left.begin;
      left = node(kind, begin, begin, {std::move(left), std::move(right)});
    }
    return left;
  }
  Expr or_() { return chain(ExprKind::kOr, "or", &ExpressionParser::and_); }
  Expr and_() { return chain(ExprKind::kAnd, "and", &ExpressionParser::not_); }

  Expr not_() {
    if (!s_.is_name("not")) return compare();
    TokenStream::Nest nest(s_);
    size_t begin = s_.current().offset;
    s_.next();
    return node(ExprKind::kUnary, begin, begin, {not_()}, "not");
  }

  Expr compare() {
    Expr first = math1();
    std::vector<Expr> operands;
    operands.push_back(std::move(first));
    for (;;) {
      if (s_.is(TokenKind::kOperator) && contains(kCompareOperators, s_.current().value)) {
        s_.next();
      } else if (s_.is_name("not") && s_.look().kind == TokenKind::kName && s_.look().value == "in") {
        s_.next();
        s_.next();
      } else if (!s_.skip_name("in")) {
        break;
      }
      operands.push_back(math1());
    }
    if (operands.size() == 1) return std::move(operands.front());
    size_t begin = operands.front().begin;
    return node(ExprKind::kCompare, begin, begin, std::move(operands));
  }

  /// `left (op right)*` for the arithmetic operators `ops`, left-associative.
  template <typename Operand>
  Expr binary(std::initializer_list<std::string_view> ops, Operand operand) {
    Expr left = (this->*operand)();
    while (s_.is(TokenKind::kOperator) && contains(ops, s_.current().value)) {
      std::string op = s_.current().value;
      size_t at = s_.current().offset;
      s_.next();
      Expr right = (this->*operand)();
      size_t begin = left.begin;
      left = node(ExprKind::kBinary, begin, at, {std::move(left), std::move(right)}, op);
    }
    return left;
  }
  Expr math1() { return binary({"+", "-"}, &ExpressionParser::concat); }
  Expr math2() { return binary({"*", "/", "//", "%"}, &ExpressionParser::pow); }
  Expr pow() { return binary({"**"}, &ExpressionParser::unary_filtered); }

  Expr concat() {
    std::vector<Expr> parts;
    parts.push_back(math2());
    while (s_.skip_op("~")) parts.push_back(math2());
    if (parts.size() == 1) return std::move(parts.front());
    size_t begin = parts.front().begin;
    return node(ExprKind::kConcat, begin, begin, std::move(parts));
  }

  Expr unary_filtered() { return unary(true); }

  Expr unary(bool with_filter) {
    Expr value;
    if (s_.is_op("-") || s_.is_op("+")) {
      TokenStream::Nest nest(s_);
      size_t begin = s_.current().offset;
      std::string op = s_.current().value;
      s_.next();
      value = node(ExprKind::kUnary, begin, begin, {unary(false)}, op);
    } else {
      value = primary();
    }
    value = postfix(std::move(value));
    return with_filter ? filter_expr(std::move(value)) : value;
  }

  Expr name(bool with_namespace) {
    Token token = s_.expect_name();
    if (contains(kConstants, token.value))
      return node(ExprKind::kConstant, token.offset, token.offset, {}, token.value);
    if (with_namespace && s_.skip_op(".")) {
      Token attr = s_.expect_name();
      return node(ExprKind::kNamespaceRef, token.offset, attr.offset, {}, token.value + "." + attr.value);
    }
    return node(ExprKind::kName, token.offset, token.offset, {}, token.value);
  }

  Expr strings() {  // adjacent literals are one string, as parse_primary joins them
    Expr value{.kind = ExprKind::kString, .offset = s_.current().offset, .begin = s_.current().offset};
    while (s_.is(TokenKind::kString)) {
      value.name += s_.current().value;
      value.unreadable = value.unreadable || s_.current().unreadable;
      s_.next();
    }
    return finish(std::move(value));
  }

  /// `[a, b]` or `{k: v}`, a trailing comma allowed, as parse_list and parse_dict.
  Expr display(bool dict) {
    size_t begin = s_.expect_op(dict ? "{" : "[").offset;
    std::string_view close = dict ? "}" : "]";
    std::vector<Expr> items;
    while (!s_.is_op(close)) {
      if (!items.empty()) s_.expect_op(",");
      if (s_.is_op(close)) break;
      items.push_back(expression(true));
      if (!dict) continue;
      s_.expect_op(":");
      items.push_back(expression(true));
    }
    s_.expect_op(close);
    return node(dict ? ExprKind::kDict : ExprKind::kList, begin, begin, std::move(items));
  }

  Expr postfix(Expr value) { return trailers(std::move(value), false); }
  Expr filter_expr(Expr value) { return trailers(std::move(value), true); }

  /// parse_postfix (subscripts and calls) or, `with_filters`, parse_filter_expr (filters, tests and calls).
  Expr trailers(Expr value, bool with_filters) {
    for (;;) {
      if (!with_filters && (s_.is_op(".") || s_.is_op("["))) {
        value = subscript(std::move(value));
      } else if (with_filters && s_.is_op("|")) {
        value = filters(std::move(value), false);
      } else if (with_filters && s_.is_name("is")) {
        value = test(std::move(value));
      } else if (s_.is_op("(")) {
        value = call(std::move(value));
      } else {
        return value;
      }
    }
  }

  Expr subscript(Expr subject) {
    size_t begin = subject.begin;
    if (s_.skip_op(".")) {
      Token attr = s_.current();
      s_.next();
      if (attr.kind == TokenKind::kName)
        return node(ExprKind::kGetattr, begin, attr.offset, {std::move(subject)}, attr.value);
      if (attr.kind != TokenKind::kNumber) throw SyntaxError{"expected name or number", attr.offset};
      Expr index = node(ExprKind::kNumber, attr.offset, attr.offset, {}, attr.value);
      return node(ExprKind::kGetitem, begin, attr.offset, {std::move(subject), std::move(index)});
    }
    TokenStream::Nest nest(s_);
    size_t open = s_.expect_op("[").offset;
    std::vector<Expr> keys;
    while (!s_.is_op("]")) {
      if (!keys.empty()) s_.expect_op(",");
      keys.push_back(subscribed());
    }
    s_.expect_op("]");
    Expr key = keys.size() == 1 ? std::move(keys.front()) : node(ExprKind::kTuple, open, open, std::move(keys));
    size_t at = key.kind == ExprKind::kTuple ? open : key.begin;
    return node(ExprKind::kGetitem, begin, at, {std::move(subject), std::move(key)});
  }

  /// A key or a slice (`a:b:c`, any part left out).
  Expr subscribed() {
    size_t begin = s_.current().offset;
    std::vector<Expr> parts;
    if (!s_.is_op(":")) {
      Expr key = expression(true);
      if (!s_.is_op(":")) return key;
      parts.push_back(std::move(key));
    } else {
      parts.emplace_back();
    }
    s_.next();  // the first ':'
    parts.push_back(s_.is_op(":") || s_.is_op("]") || s_.is_op(",") ? Expr{} : expression(true));
    if (s_.skip_op(":")) {
      parts.push_back(s_.is_op("]") || s_.is_op(",") ? Expr{} : expression(true));
    } else {
      parts.emplace_back();
    }
    return node(ExprKind::kSlice, begin, begin, std::move(parts));
  }

  /// `(args, name=value, *args, **kwargs)` appended to `into` (children and keywords), as parse_call_args.
  void arguments(Expr& into) {
    TokenStream::Nest nest(s_);
    size_t open = s_.expect_op("(").offset;
    bool dynamic_args = false, dynamic_kwargs = false, kwargs = false;
    auto ensure = [&](bool ok) {
      if (!ok) throw SyntaxError{"invalid syntax for function call expression", open};
    };
    while (!s_.is_op(")")) {
      if (!into.keywords.empty()) {
        s_.expect_op(",");
        if (s_.is_op(")")) break;  // a trailing comma
      }
      std::string keyword;
      if (s_.is_op("*") || s_.is_op("**")) {
        keyword = s_.current().value;
        ensure(keyword == "*" ? !dynamic_args && !dynamic_kwargs : !dynamic_kwargs);
        (keyword == "*" ? dynamic_args : dynamic_kwargs) = true;
        s_.next();
      } else if (s_.is(TokenKind::kName) && s_.look().kind == TokenKind::kOperator && s_.look().value == "=") {
        ensure(!dynamic_kwargs);
        keyword = s_.current().value;
        kwargs = true;
        s_.next();
        s_.next();
      } else {
        ensure(!dynamic_args && !dynamic_kwargs && !kwargs);
      }
      into.children.push_back(expression(true));
      into.keywords.push_back(std::move(keyword));
    }
    s_.expect_op(")");
  }

  Expr call(Expr callee) {
    size_t begin = callee.begin;
    Expr value{.kind = ExprKind::kCall, .offset = s_.current().offset, .begin = begin};
    value.children.push_back(std::move(callee));
    arguments(value);
    return finish(std::move(value));
  }

  /// A filter or a test: its (dotted) name, then its arguments.
  Expr named_call(ExprKind kind, Expr subject) {
    Token token = s_.expect_name();
    std::string name = token.value;
    while (s_.skip_op(".")) {
      name += '.';
      name += s_.expect_name().value;
    }
    size_t begin = subject.kind == ExprKind::kEmpty ? token.offset : subject.begin;
    Expr value{.kind = kind, .name = std::move(name), .offset = token.offset, .begin = begin};
    value.children.push_back(std::move(subject));
    if (s_.is_op("(")) {
      arguments(value);
    } else if (kind == ExprKind::kTest && test_argument_follows()) {
      if (s_.is_name("is")) s_.fail("you cannot chain multiple tests with is");
      value.children.push_back(postfix(primary()));
      value.keywords.emplace_back();
    }
    return finish(std::move(value));
  }

  /// parse_test's one argument without parentheses: `x is divisibleby 3`.
  bool test_argument_follows() const {
    if (s_.is_name("else") || s_.is_name("or") || s_.is_name("and")) return false;
    return s_.is(TokenKind::kName) || s_.is(TokenKind::kString) || s_.is(TokenKind::kNumber) || s_.is_op("(") ||
           s_.is_op("[") || s_.is_op("{");
  }

  Expr test(Expr subject) {
    size_t begin = subject.begin;
    size_t is_at = s_.expect_name("is").offset;
    bool negated = s_.skip_name("not");
    Expr value = named_call(ExprKind::kTest, std::move(subject));
    if (!negated) return value;
    return node(ExprKind::kUnary, begin, is_at, {std::move(value)}, "not");
  }

  TokenStream& s_;
};

bool can_assign(const Expr& target) {
  if (target.kind == ExprKind::kName || target.kind == ExprKind::kNamespaceRef) return true;
  return target.kind == ExprKind::kTuple && std::all_of(target.children.begin(), target.children.end(), can_assign);
}

}  // namespace

Expr parse_expression(TokenStream& stream, bool with_condexpr) {
  return ExpressionParser(stream).expression(with_condexpr);
}

Expr parse_tuple(TokenStream& stream, const TupleOptions& options) { return ExpressionParser(stream).tuple(options); }

Expr parse_filters(TokenStream& stream, Expr subject, bool start_inline) {
  return ExpressionParser(stream).filters(std::move(subject), start_inline);
}

Expr parse_assign_target(TokenStream& stream, bool with_tuple, std::vector<std::string_view> extra_end,
                         bool with_namespace) {
  ExpressionParser parser(stream);
  size_t at = stream.current().offset;
  Expr target =
      with_tuple
          ? parser.tuple({.simplified = true, .extra_end = std::move(extra_end), .with_namespace = with_namespace})
          : parser.primary(with_namespace);
  if (!can_assign(target)) throw SyntaxError{"can't assign to this expression", at};
  return target;
}

}  // namespace precdetect::jinja
