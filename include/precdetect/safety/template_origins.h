#pragma once
/// Where a value in a chat template comes from, as far as a name built from it matters: the caller's data (the
/// messages, a loop over them, a number), strings the template spells, or a string assembled at render time.
/// The chat-template judge asks it of every subscript's key and every attribute name a filter takes: jinja2's
/// plain Environment turns `x[key]` into `getattr(x, key)` when the item is missing, so a key the template
/// assembles reaches what a dotted name would (`x['__cla' ~ 'ss__']`).

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "precdetect/safety/jinja_ast.h"

namespace precdetect::jinja {

/// A value's origin. Inert (nothing set) is data: what the caller passes, numbers, what a loop over them yields.
struct Origin {
  bool built = false;             ///< a string assembled at render time, or one the model's files choose
  std::set<std::string> strings;  ///< string literals of the template it may be
  /// A container's elements: `for x in [...]`, `[...][0]` (nested containers are flattened into one level).
  bool element_built = false;
  std::set<std::string> element_strings;

  bool inert() const { return !built && strings.empty() && !element_built && element_strings.empty(); }
  /// Joins `other` into this; returns whether anything changed.
  bool join(const Origin& other);
};

/// The origins of a template's variables, bound flow- and scope-insensitively (a variable's origin joins every
/// value any `set`, `for`, `with`, macro call or namespace assignment gives it anywhere), to a fixed point.
class Origins {
 public:
  explicit Origins(const std::vector<Stmt>& body);

  /// The origin of `expr`'s value.
  Origin of(const Expr& expr) const;

 private:
  Origin name(const std::string& name) const;
  Origin call(const Expr& call) const;
  Origin filter(const Expr& filter) const;
  Origin member(const Expr& subject_of, const std::string& attribute) const;
  Origin joined(const std::vector<Expr>& exprs, size_t from) const;

  void collect(const std::vector<Stmt>& body);
  void collect(const Stmt& stmt);
  void collect_calls(const Expr& expr);
  /// One round of every binding; returns whether any variable's origin grew.
  bool bind_all();
  bool bind(const Expr& target, const Origin& origin, const Expr* value);
  bool bind_keywords(const Expr& target, const Expr& value);
  bool bind_call(const Expr& call);
  bool bind_parameters(const Stmt& signature, const Expr& call);
  bool bind_name(const std::string& name, const Origin& origin) { return variables_[name].join(origin); }

  /// A binding: `target` takes `value`'s origin, or its element's (`for`), or is built (a block set's text).
  struct Binding {
    const Expr* target;
    const Expr* value;  ///< nullptr: built
    bool element = false;
  };
  std::vector<Binding> bindings_;
  std::map<std::string, const Stmt*> macros_;  ///< by name
  std::vector<const Expr*> calls_;             ///< every call: of macros, `caller`, mutating methods
  std::vector<const Stmt*> call_blocks_;       ///< whose parameters `caller(...)` binds
  std::map<std::string, Origin> variables_;
};

}  // namespace precdetect::jinja
