#include "precdetect/safety/jinja_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

#include "precdetect/core/utf8.h"
#include "precdetect/safety/jinja_expression.h"
#include "precdetect/safety/jinja_text.h"
#include "precdetect/safety/jinja_tokens.h"

namespace precdetect::jinja {
namespace {

using Tags = std::initializer_list<std::string_view>;

/// The statement grammar of parser.py (subparse, parse_statement and one function per tag).
class StatementParser {
 public:
  explicit StatementParser(TokenStream& stream) : s_(stream) {}

  std::vector<Stmt> body(Tags end_tags) {
    TokenStream::Nest nest(s_);
    std::vector<Stmt> statements;
    for (;;) {
      if (s_.is(TokenKind::kVariableBegin)) {
        s_.next();
        Expr value = parse_tuple(s_);
        statements.push_back({.kind = StmtKind::kOutput, .offset = value.begin, .exprs = vector_of(std::move(value))});
        s_.expect(TokenKind::kVariableEnd, "end of print statement");
      } else if (s_.is(TokenKind::kBlockBegin)) {
        s_.next();
        if (s_.is(TokenKind::kName) &&
            std::find(end_tags.begin(), end_tags.end(), s_.current().value) != end_tags.end())
          return statements;
        statements.push_back(statement());
        s_.expect(TokenKind::kBlockEnd, "end of statement block");
      } else if (s_.is(TokenKind::kEnd) && end_tags.size() == 0) {
        return statements;
      } else {
        s_.fail(end_tags.size() == 0 ? fmt::format("unexpected '{}'", describe(s_.current()))
                                     : fmt::format("unexpected end of template, expected '{}'", *end_tags.begin()));
      }
    }
  }

 private:
  static std::vector<Expr> vector_of(Expr a) {
    std::vector<Expr> exprs;
    exprs.push_back(std::move(a));
    return exprs;
  }
  static std::vector<Expr> vector_of(Expr a, Expr b) {
    std::vector<Expr> exprs = vector_of(std::move(a));
    exprs.push_back(std::move(b));
    return exprs;
  }

  /// parse_statements: an optional `:`, the tag's end, then the body up to one of `end_tags`, which stays current
  /// unless `drop_needle`.
  std::vector<Stmt> statements(Tags end_tags, bool drop_needle) {
    s_.skip_op(":");
    s_.expect(TokenKind::kBlockEnd, "end of statement block");
    std::vector<Stmt> result = body(end_tags);
    if (drop_needle) s_.next();
    return result;
  }

  Stmt statement() {
    if (!s_.is(TokenKind::kName)) s_.fail("tag name expected");
    std::string tag = s_.current().value;
    Stmt stmt{.offset = s_.current().offset};
    s_.next();
    if (tag == "for") return for_(stmt);
    if (tag == "if") return if_(stmt);
    if (tag == "set") return set(stmt);
    if (tag == "macro") return macro(stmt);
    if (tag == "call") return call_block(stmt);
    if (tag == "filter") return filter_block(stmt);
    if (tag == "with") return with(stmt);
    if (tag == "block") return block(stmt);
    if (tag == "include" || tag == "extends") return include(stmt, tag == "include");
    if (tag == "import" || tag == "from") return import(stmt, tag == "from");
    if (tag == "print" || tag == "do") return print(stmt, tag == "do");
    if (tag == "autoescape" || tag == "generation") return scoped(stmt, tag);
    if (tag == "break" || tag == "continue") return Stmt{.kind = StmtKind::kLoopControl, .offset = stmt.offset};
    throw SyntaxError{fmt::format("unknown tag '{}'", tag), stmt.offset};
  }

  Stmt for_(Stmt stmt) {
    stmt.kind = StmtKind::kFor;
    Expr target = parse_assign_target(s_, true, {"in"});
    s_.expect_name("in");
    Expr iterable = parse_tuple(s_, {.with_condexpr = false, .extra_end = {"recursive"}});
    stmt.exprs = vector_of(std::move(target), std::move(iterable));
    stmt.exprs.push_back(s_.skip_name("if") ? parse_expression(s_) : Expr{});
    s_.skip_name("recursive");
    stmt.bodies.push_back(statements({"endfor", "else"}, false));
    bool has_else = s_.current().value == "else";
    s_.next();
    stmt.bodies.push_back(has_else ? statements({"endfor"}, true) : std::vector<Stmt>{});
    return stmt;
  }

  Stmt if_(Stmt stmt) {
    stmt.kind = StmtKind::kIf;
    for (;;) {
      stmt.exprs.push_back(parse_tuple(s_, {.with_condexpr = false}));
      stmt.bodies.push_back(statements({"elif", "else", "endif"}, false));
      std::string tag = s_.current().value;
      s_.next();
      if (tag == "elif") continue;
      if (tag == "else") stmt.bodies.push_back(statements({"endif"}, true));
      return stmt;
    }
  }

  Stmt set(Stmt stmt) {
    Expr target = parse_assign_target(s_, true, {}, true);
    if (s_.skip_op("=")) {
      stmt.kind = StmtKind::kSet;
      stmt.exprs = vector_of(std::move(target), parse_tuple(s_));
      return stmt;
    }
    stmt.kind = StmtKind::kSetBlock;
    stmt.exprs = vector_of(std::move(target), parse_filters(s_, Expr{}));
    stmt.bodies.push_back(statements({"endset"}, true));
    return stmt;
  }

  /// A macro's or call block's `(a, b=default)`: names to `params`, defaults to `exprs`.
  void signature(Stmt& stmt) {
    s_.expect_op("(");
    while (!s_.is_op(")")) {
      if (!stmt.params.empty()) s_.expect_op(",");
      stmt.params.push_back(s_.expect_name().value);
      if (s_.skip_op("=")) {
        stmt.exprs.push_back(parse_expression(s_));
      } else if (!stmt.exprs.empty()) {
        s_.fail("non-default argument follows default argument");
      }
    }
    s_.expect_op(")");
  }

  Stmt macro(Stmt stmt) {
    stmt.kind = StmtKind::kMacro;
    stmt.name = s_.expect_name().value;
    signature(stmt);
    stmt.bodies.push_back(statements({"endmacro"}, true));
    return stmt;
  }

  Stmt call_block(Stmt stmt) {
    stmt.kind = StmtKind::kCallBlock;
    if (s_.is_op("(")) signature(stmt);
    Expr call = parse_expression(s_);
    if (call.kind != ExprKind::kCall) throw SyntaxError{"expected call", stmt.offset};
    stmt.exprs.push_back(std::move(call));
    stmt.bodies.push_back(statements({"endcall"}, true));
    return stmt;
  }

  Stmt filter_block(Stmt stmt) {
    stmt.kind = StmtKind::kFilterBlock;
    stmt.exprs = vector_of(parse_filters(s_, Expr{}, true));
    stmt.bodies.push_back(statements({"endfilter"}, true));
    return stmt;
  }

  Stmt with(Stmt stmt) {
    stmt.kind = StmtKind::kWith;
    while (!s_.is(TokenKind::kBlockEnd)) {
      if (!stmt.exprs.empty()) s_.expect_op(",");
      stmt.exprs.push_back(parse_assign_target(s_));
      s_.expect_op("=");
      stmt.exprs.push_back(parse_expression(s_));
    }
    stmt.bodies.push_back(statements({"endwith"}, true));
    return stmt;
  }

  Stmt block(Stmt stmt) {
    stmt.kind = StmtKind::kBlock;
    stmt.name = s_.expect_name().value;
    s_.skip_name("scoped");
    s_.skip_name("required");
    if (s_.is_op("-")) s_.fail("block names in Jinja have to be valid Python identifiers");
    stmt.bodies.push_back(statements({"endblock"}, true));
    s_.skip_name(stmt.name);
    return stmt;
  }

  Stmt include(Stmt stmt, bool include) {
    stmt.kind = include ? StmtKind::kInclude : StmtKind::kExtends;
    stmt.exprs = vector_of(parse_expression(s_));
    if (!include) return stmt;
    if (s_.is_name("ignore") && s_.look().value == "missing") {
      s_.next();
      s_.next();
    }
    context();
    return stmt;
  }

  /// `with context` or `without context`, if there.
  bool context() {
    if (!(s_.is_name("with") || s_.is_name("without")) || s_.look().kind != TokenKind::kName ||
        s_.look().value != "context")
      return false;
    s_.next();
    s_.next();
    return true;
  }

  Stmt import(Stmt stmt, bool from) {
    stmt.kind = StmtKind::kImport;
    stmt.exprs = vector_of(parse_expression(s_));
    if (!from) {
      s_.expect_name("as");
      stmt.params.push_back(s_.expect_name().value);
      context();
      return stmt;
    }
    s_.expect_name("import");
    for (;;) {
      if (!stmt.params.empty()) s_.expect_op(",");
      if (!s_.is(TokenKind::kName)) s_.expect_name();
      if (context()) return stmt;
      Token name = s_.expect_name();
      if (name.value.starts_with('_'))
        throw SyntaxError{"names starting with an underline can not be imported", name.offset};
      stmt.params.push_back(s_.skip_name("as") ? s_.expect_name().value : name.value);
      if (context() || !s_.is_op(",")) return stmt;
    }
  }

  Stmt print(Stmt stmt, bool do_) {
    stmt.kind = do_ ? StmtKind::kDo : StmtKind::kPrint;
    if (do_) {
      stmt.exprs = vector_of(parse_tuple(s_));
      return stmt;
    }
    while (!s_.is(TokenKind::kBlockEnd)) {
      if (!stmt.exprs.empty()) s_.expect_op(",");
      stmt.exprs.push_back(parse_expression(s_));
    }
    return stmt;
  }

  /// A tag with a body and nothing to bind: autoescape (with its setting), transformers' generation.
  Stmt scoped(Stmt stmt, const std::string& tag) {
    stmt.kind = tag == "autoescape" ? StmtKind::kAutoescape : StmtKind::kGeneration;
    if (tag == "autoescape") stmt.exprs = vector_of(parse_expression(s_));
    stmt.bodies.push_back(statements({tag == "autoescape" ? "endautoescape" : "endgeneration"}, true));
    return stmt;
  }

  TokenStream& s_;
};

}  // namespace

ParsedTemplate parse_template(std::string_view source) {
  ParsedTemplate parsed;
  try {
    if (source.size() > kMaxTemplateBytes)
      throw SyntaxError{fmt::format("{} bytes, more than the {} precdetect parses", source.size(), kMaxTemplateBytes),
                        0};
    if (!is_utf8(source)) throw SyntaxError{"not UTF-8", 0};
    TokenStream stream(tokenize(source));
    parsed.body = StatementParser(stream).body({});
  } catch (const SyntaxError& error) {
    parsed.body.clear();
    parsed.error = error;
  }
  return parsed;
}

}  // namespace precdetect::jinja
