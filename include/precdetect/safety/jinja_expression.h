#pragma once
/// Jinja2's expression grammar (jinja2/parser.py, parse_expression down to parse_primary), over a TokenStream.
/// Each function throws SyntaxError where jinja2's parser raises TemplateSyntaxError.

#include <string_view>
#include <vector>

#include "precdetect/safety/jinja_ast.h"
#include "precdetect/safety/jinja_tokens.h"

namespace precdetect::jinja {

/// An expression: a conditional expression (`a if b else c`) unless `with_condexpr` is false.
Expr parse_expression(TokenStream& stream, bool with_condexpr = true);

/// parser.py's parse_tuple options.
struct TupleOptions {
  bool simplified = false;  ///< names and literals only (an assignment target)
  bool with_condexpr = true;
  std::vector<std::string_view> extra_end;  ///< names that also end the tuple (`in` after a for's target)
  bool explicit_parentheses = false;        ///< inside `( )`, where `()` is the empty tuple
  bool with_namespace = false;              ///< `ns.attr` targets (set)
};

/// Expressions separated by commas: a kTuple when there is a comma, else the one expression.
Expr parse_tuple(TokenStream& stream, const TupleOptions& options = {});

/// `| name(args)` filters applied to `subject` (kEmpty for a filter block or a block set), while the stream is at
/// `|`; with `start_inline`, the first filter's name comes without its `|`. Returns `subject` when there is none.
Expr parse_filters(TokenStream& stream, Expr subject, bool start_inline = false);

/// An assignment target: a name, `ns.attr` (`with_namespace`), or a tuple of them (`with_tuple`); throws
/// SyntaxError for anything else (`can't assign to ...`).
Expr parse_assign_target(TokenStream& stream, bool with_tuple = true, std::vector<std::string_view> extra_end = {},
                         bool with_namespace = false);

}  // namespace precdetect::jinja
