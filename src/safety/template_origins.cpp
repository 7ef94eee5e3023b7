#include "precdetect/safety/template_origins.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace precdetect::jinja {
namespace {

// A variable's origin joins every binding anywhere, so it can only grow: a fixed point is reached in as many rounds
// as the longest chain of variables; past these rounds (or past this many strings) everything is built.
constexpr int kMaxRounds = 64;
constexpr size_t kMaxStrings = 256;

// Filters whose result is a number or a boolean, never a name.
constexpr std::array<std::string_view, 9> kNumberFilters = {"length", "count", "int",       "float",         "abs",
                                                            "round",  "sum",   "wordcount", "filesizeformat"};
// Filters that pick elements of their subject (first, last, ...) or reorder and select them, changing none.
constexpr std::array<std::string_view, 5> kElementFilters = {"first", "last", "random", "min", "max"};
constexpr std::array<std::string_view, 13> kCollectionFilters = {
    "list",       "sort",  "unique", "reverse",  "select", "reject", "selectattr",
    "rejectattr", "batch", "slice",  "dictsort", "items",  "groupby"};
// Methods that put their arguments into the container they are called on (jinja2's plain Environment allows them;
// the immutable sandbox refuses them).
constexpr std::array<std::string_view, 6> kMutators = {"append", "extend", "insert", "add", "update", "setdefault"};

bool in(const auto& list, std::string_view value) {
  return std::find(std::begin(list), std::end(list), value) != std::end(list);
}

/// An element of a value of origin `o`: of a container, one of its elements; of a string, one of its characters
/// (of which only `_` could be judged, as a name).
Origin element_of(const Origin& o) {
  Origin result{.built = o.built || o.element_built, .strings = o.element_strings};
  for (const std::string& text : o.strings) {
    for (size_t p = 0; p < text.size(); ++p) {
      size_t width = 1;
      while (p + width < text.size() && (static_cast<unsigned char>(text[p + width]) & 0xC0) == 0x80) ++width;
      result.join({.strings = {text.substr(p, width)}});
      p += width - 1;
    }
  }
  return result;
}

/// A container holding values of origin `o`.
Origin container_of(const Origin& o) {
  Origin result{.element_built = o.built || o.element_built, .element_strings = o.strings};
  result.element_strings.insert(o.element_strings.begin(), o.element_strings.end());
  return result;
}

/// What an operation on values of origin `o` yields: data stays data; anything else is assembled at render time.
Origin transformed(const Origin& o) { return {.built = !o.inert()}; }

/// `subject[key]`: an element, or for a slice a part of a container, or of a string a substring: built.
Origin item(const Origin& subject, const Expr& key) {
  if (key.kind != ExprKind::kSlice) return element_of(subject);
  if (subject.built || !subject.strings.empty()) return {.built = true};
  return subject;
}

/// A value unpacked into several targets (`for k, v in pairs`): containers are flattened to one level, so an item
/// of an element is one of the element's strings.
Origin unpacked(const Origin& o) {
  Origin result{.built = o.built || o.element_built, .strings = o.strings};
  result.strings.insert(o.element_strings.begin(), o.element_strings.end());
  return result;
}

/// Where a mutating method's receiver is bound: `x` or `ns.x`; empty when it is no variable.
std::string variable_of(const Expr& expr) {
  if (expr.kind == ExprKind::kName) return expr.name;
  if (expr.kind == ExprKind::kGetattr && expr.children[0].kind == ExprKind::kName)
    return expr.children[0].name + "." + expr.name;
  return {};
}

}  // namespace

bool Origin::join(const Origin& other) {
  size_t before = strings.size() + element_strings.size();
  bool was_built = built, element_was_built = element_built;
  built = built || other.built;
  element_built = element_built || other.element_built;
  strings.insert(other.strings.begin(), other.strings.end());
  element_strings.insert(other.element_strings.begin(), other.element_strings.end());
  if (strings.size() > kMaxStrings) built = true;
  if (element_strings.size() > kMaxStrings) element_built = true;
  return built != was_built || element_built != element_was_built || strings.size() + element_strings.size() != before;
}

Origins::Origins(const std::vector<Stmt>& body) {
  collect(body);
  for (int round = 0; bind_all(); ++round) {
    if (round < kMaxRounds) continue;
    for (auto& [name, origin] : variables_) origin.built = origin.element_built = true;
    return;
  }
}

Origin Origins::of(const Expr& expr) const {
  switch (expr.kind) {
    case ExprKind::kString:
      return expr.unreadable ? Origin{.built = true} : Origin{.strings = {expr.name}};
    case ExprKind::kName:
    case ExprKind::kNamespaceRef:
      return name(expr.name);
    case ExprKind::kList:
    case ExprKind::kTuple:
    case ExprKind::kDict:
      return container_of(joined(expr.children, 0));
    case ExprKind::kGetattr:
      return member(expr.children[0], expr.name);
    case ExprKind::kGetitem:
      return item(of(expr.children[0]), expr.children[1]);
    case ExprKind::kCall:
      return call(expr);
    case ExprKind::kFilter:
      return filter(expr);
    case ExprKind::kBinary:
    case ExprKind::kConcat:
      return transformed(joined(expr.children, 0));
    case ExprKind::kUnary:
      return expr.name == "not" ? Origin{} : transformed(of(expr.children[0]));
    case ExprKind::kAnd:
    case ExprKind::kOr:  // either operand, as Python's and/or return
      return joined(expr.children, 0);
    case ExprKind::kCondition: {
      Origin result = of(expr.children[0]);
      result.join(of(expr.children[2]));
      return result;
    }
    case ExprKind::kEmpty:
    case ExprKind::kNumber:
    case ExprKind::kConstant:
    case ExprKind::kSlice:
    case ExprKind::kTest:
    case ExprKind::kCompare:
      break;
  }
  return {};
}

Origin Origins::joined(const std::vector<Expr>& exprs, size_t from) const {
  Origin result;
  for (size_t i = from; i < exprs.size(); ++i) result.join(of(exprs[i]));
  return result;
}

Origin Origins::name(const std::string& name) const {
  if (auto found = variables_.find(name); found != variables_.end()) return found->second;
  // bos_token, eos_token, ...: the special tokens renderers pass from the model's own files (tokenizer_config.json,
  // GGUF's vocabulary), which the template's author writes as freely as the template.
  if (name.ends_with("_token")) return {.built = true};
  return {};  // the caller's data (messages, tools), a global (range, namespace), or unbound
}

Origin Origins::member(const Expr& subject, const std::string& attribute) const {
  if (subject.kind == ExprKind::kName) {
    if (auto found = variables_.find(subject.name + "." + attribute); found != variables_.end()) return found->second;
  }
  return element_of(of(subject));
}

Origin Origins::call(const Expr& call) const {
  const Expr& callee = call.children[0];
  if (callee.kind == ExprKind::kName) {
    // A macro, or a call block's caller, returns the text it renders: template text, which may be any name.
    if (macros_.contains(callee.name) || callee.name == "caller") return {.built = true};
    if (callee.name == "range") return {};
    return joined(call.children, 1);  // namespace(...), dict(...), cycler(...) hold their arguments
  }
  if (callee.kind == ExprKind::kGetattr) {
    if (!of(callee.children[0]).inert()) return {.built = true};  // '_'.join(...), '__X__'.lower()
    return joined(call.children, 1);  // data.get(key, default), loop.cycle(a, b): may return an argument
  }
  return transformed(joined(call.children, 0));
}

Origin Origins::filter(const Expr& filter) const {
  const std::string& name = filter.name;
  if (in(kNumberFilters, name)) return {};
  Origin subject = of(filter.children[0]);
  if (name == "attr" || in(kElementFilters, name)) return element_of(subject);
  if (in(kCollectionFilters, name)) return container_of(element_of(subject));
  if (name == "default" || name == "d") {
    subject.join(joined(filter.children, 1));
    return subject;
  }
  subject.join(joined(filter.children, 1));
  return transformed(subject);  // lower, replace, join, format, string, tojson, ...: text made from its inputs
}

void Origins::collect(const std::vector<Stmt>& body) {
  for (const Stmt& stmt : body) collect(stmt);
}

void Origins::collect(const Stmt& stmt) {
  const std::vector<Expr>& e = stmt.exprs;
  switch (stmt.kind) {
    case StmtKind::kSet:
      bindings_.push_back({.target = &e[0], .value = &e[1]});
      break;
    case StmtKind::kSetBlock:
      bindings_.push_back({.target = &e[0], .value = nullptr});
      break;
    case StmtKind::kFor:
      bindings_.push_back({.target = &e[0], .value = &e[1], .element = true});
      break;
    case StmtKind::kWith:
      for (size_t i = 0; i + 1 < e.size(); i += 2) bindings_.push_back({.target = &e[i], .value = &e[i + 1]});
      break;
    case StmtKind::kMacro:
      macros_[stmt.name] = &stmt;
      break;
    case StmtKind::kCallBlock:
      call_blocks_.push_back(&stmt);
      break;
    default:
      break;
  }
  for (const Expr& expr : e) collect_calls(expr);
  for (const std::vector<Stmt>& body : stmt.bodies) collect(body);
}

void Origins::collect_calls(const Expr& expr) {
  if (expr.kind == ExprKind::kCall) calls_.push_back(&expr);
  for (const Expr& child : expr.children) collect_calls(child);
}

bool Origins::bind_all() {
  bool changed = false;
  for (const Binding& binding : bindings_) {
    if (!binding.value) {
      changed |= bind(*binding.target, {.built = true}, nullptr);  // a block set holds the text it renders
      continue;
    }
    Origin value = of(*binding.value);
    changed |=
        bind(*binding.target, binding.element ? element_of(value) : value, binding.element ? nullptr : binding.value);
    if (!binding.element) changed |= bind_keywords(*binding.target, *binding.value);
  }
  for (const Expr* call : calls_) changed |= bind_call(*call);
  return changed;
}

bool Origins::bind(const Expr& target, const Origin& origin, const Expr* value) {
  if (target.kind != ExprKind::kTuple) return bind_name(target.name, origin);
  bool pairwise = value && value->kind == ExprKind::kTuple && value->children.size() == target.children.size();
  bool changed = false;
  for (size_t i = 0; i < target.children.size(); ++i)
    changed |= bind(target.children[i], pairwise ? of(value->children[i]) : unpacked(origin), nullptr);
  return changed;
}

/// `set ns = namespace(a=...)` (or dict(...)): `ns.a` is bound to its argument, apart from ns's other attributes.
bool Origins::bind_keywords(const Expr& target, const Expr& value) {
  if (target.kind != ExprKind::kName || value.kind != ExprKind::kCall || value.children[0].kind != ExprKind::kName)
    return false;
  bool changed = false;
  for (size_t i = 0; i < value.keywords.size(); ++i) {
    const std::string& keyword = value.keywords[i];
    if (!keyword.empty() && keyword != "*" && keyword != "**")
      changed |= bind_name(target.name + "." + keyword, of(value.children[i + 1]));
  }
  return changed;
}

bool Origins::bind_call(const Expr& call) {
  const Expr& callee = call.children[0];
  if (callee.kind == ExprKind::kName) {
    if (auto macro = macros_.find(callee.name); macro != macros_.end()) return bind_parameters(*macro->second, call);
    bool changed = false;
    if (callee.name == "caller")
      for (const Stmt* block : call_blocks_) changed |= bind_parameters(*block, call);
    return changed;
  }
  if (callee.kind != ExprKind::kGetattr || !in(kMutators, callee.name)) return false;
  std::string variable = variable_of(callee.children[0]);
  return !variable.empty() && bind_name(variable, container_of(joined(call.children, 1)));
}

/// A macro's (or call block's) parameters bound to one call's arguments, and to their defaults.
bool Origins::bind_parameters(const Stmt& signature, const Expr& call) {
  const std::vector<std::string>& params = signature.params;
  size_t defaults = signature.kind == StmtKind::kCallBlock ? signature.exprs.size() - 1 : signature.exprs.size();
  bool changed = false;
  for (size_t i = 0; i < defaults && i < params.size(); ++i)
    changed |= bind_name(params[params.size() - defaults + i], of(signature.exprs[i]));
  size_t position = 0;
  for (size_t i = 0; i < call.keywords.size(); ++i) {
    const std::string& keyword = call.keywords[i];
    Origin value = of(call.children[i + 1]);
    if (keyword == "*" || keyword == "**") {
      for (const std::string& param : params) changed |= bind_name(param, unpacked(value));
    } else if (keyword.empty()) {
      changed |= bind_name(position < params.size() ? params[position] : "varargs", value);
      ++position;
    } else {
      bool known = std::find(params.begin(), params.end(), keyword) != params.end();
      changed |= bind_name(known ? keyword : "kwargs", value);
    }
  }
  return changed;
}

}  // namespace precdetect::jinja
