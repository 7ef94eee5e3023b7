#pragma once
/// A Jinja2 template as jinja2/parser.py reads it: expressions and statements, each with where it is in the
/// template's text (byte offsets), for the chat-template judge (safety/chat_template.h). Plain data: the parser
/// (jinja_parser.h) builds it, nothing evaluates it.

#include <cstddef>
#include <string>
#include <vector>

namespace precdetect::jinja {

/// jinja2.nodes' expression classes, folded where the judge needs no difference (Add and Sub are one kBinary).
enum class ExprKind {
  kEmpty,     ///< a missing part: a slice's bound, a filter block's subject
  kName,      ///< a variable: `name`
  kString,    ///< a string literal; adjacent literals are one (`'a' 'b'`), as jinja2 joins them
  kNumber,    ///< an integer or float literal
  kConstant,  ///< true, false, none (any case jinja2 accepts)
  kList,      ///< `[a, b]`
  kTuple,     ///< `(a, b)` or `a, b`
  kDict,      ///< `{k: v}`: children are key, value, key, value, ...
  kGetattr,   ///< `subject.name`
  kGetitem,   ///< `subject[key]` (and `subject.0`): children are subject, key
  kSlice,     ///< `start:stop:step` inside a subscript: three children, kEmpty where left out
  kCall,      ///< `callee(arguments)`
  kFilter,    ///< `subject | name(arguments)`
  kTest,      ///< `subject is name(arguments)`
  kUnary,     ///< `-x`, `+x`, `not x`: `name` is the operator
  kBinary,    ///< `+ - * / // % **`: `name` is the operator
  kConcat,    ///< `a ~ b ~ c`
  kCompare,   ///< `a == b < c`, `in`, `not in`: children are the operands
  kAnd,
  kOr,
  kCondition,     ///< `body if test else orelse`: children are body, test and orelse (kEmpty when left out)
  kNamespaceRef,  ///< `ns.attr` as the target of a set: `name` is "ns.attr"
};

/// One expression node.
struct Expr {
  ExprKind kind = ExprKind::kEmpty;
  /// The variable, attribute, filter or test name; the operator; a string literal's decoded value.
  std::string name;
  size_t offset = 0;  ///< where the construct is: an attribute's, filter's or test's name, a subscript's key
  size_t begin = 0;   ///< the whole expression's span in the template
  size_t end = 0;
  size_t depth = 1;         ///< of the tree below it, itself included (the parser bounds it)
  bool unreadable = false;  ///< kString: an escape (`\N{...}`) whose value precdetect does not decode
  /// Operands in source order. kCall: the callee, then the arguments; kFilter, kTest: the subject (kEmpty for a
  /// filter block's), then the arguments.
  std::vector<Expr> children;
  /// kCall, kFilter, kTest: one per argument (children after the first): "" positional, a keyword's name, "*" for
  /// `*args`, "**" for `**kwargs`.
  std::vector<std::string> keywords;
};

/// jinja2's statements, with the extensions a chat template may use: transformers renders with loopcontrols
/// (`break`, `continue`) and its `generation` block; `do` is jinja2.ext.do.
enum class StmtKind {
  kOutput,       ///< `{{ expression }}`: exprs[0]
  kIf,           ///< exprs: each branch's test; bodies: each branch's body, then else's
  kFor,          ///< exprs: target, iterable, filter (kEmpty); bodies: body, else
  kSet,          ///< exprs: target, value
  kSetBlock,     ///< `{% set x %}...{% endset %}`: exprs: target, filter (kEmpty); bodies: the body
  kMacro,        ///< name; params; exprs: defaults of the last params; bodies: the body
  kCallBlock,    ///< params (of `caller`); exprs: caller defaults, then the call last; bodies: the body
  kFilterBlock,  ///< exprs: the filter (subject kEmpty); bodies: the body
  kWith,         ///< exprs: target, value, target, value...; bodies: the body
  kBlock,        ///< `{% block name %}`: bodies: the body
  kExtends,      ///< exprs: the template's name
  kInclude,      ///< exprs: the template's name
  kImport,       ///< `import x as name` or `from x import a, b as c`: exprs: the template's name; params: names bound
  kAutoescape,   ///< exprs: the setting; bodies: the body
  kPrint,        ///< `{% print a, b %}` (jinja2.ext.debug-free core): exprs
  kDo,           ///< `{% do expression %}`: exprs[0]
  kLoopControl,  ///< `break` or `continue`
  kGeneration,   ///< transformers' `{% generation %}...{% endgeneration %}`: bodies: the body
};

/// One statement node.
struct Stmt {
  StmtKind kind = StmtKind::kOutput;
  size_t offset = 0;  ///< of its tag's name (or its expression, for kOutput)
  std::string name;   ///< a macro's or block's name
  std::vector<std::string> params;
  std::vector<Expr> exprs;
  std::vector<std::vector<Stmt>> bodies;
};

}  // namespace precdetect::jinja
