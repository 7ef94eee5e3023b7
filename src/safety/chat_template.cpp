#include "precdetect/safety/chat_template.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>

#include "precdetect/safety/jinja_parser.h"
#include "precdetect/safety/template_origins.h"

namespace precdetect {
namespace {

using jinja::Expr;
using jinja::ExprKind;
using jinja::Origin;
using jinja::Stmt;
using jinja::StmtKind;

// Attributes the sandbox refuses besides those starting with `_` (jinja2/sandbox.py is_internal_attribute): a
// type's mro, a generator's, coroutine's and async generator's frame and code (UNSAFE_GENERATOR_ATTRIBUTES and
// kin), any attribute of a frame, code object or traceback (the frame's and traceback's listed here), and the
// function and method internals of Python 2 that jinja2 2.x listed (UNSAFE_FUNCTION_ATTRIBUTES,
// UNSAFE_METHOD_ATTRIBUTES). Judged whatever the object: its type is known only at render time, and no chat
// template needs these names.
constexpr std::array<std::string_view, 23> kInternalNames = {
    "mro",          "gi_frame",      "gi_code",   "cr_frame", "cr_code",  "ag_frame", "ag_code",      "f_globals",
    "f_locals",     "f_builtins",    "f_back",    "f_code",   "tb_frame", "tb_next",  "func_globals", "func_code",
    "func_closure", "func_defaults", "func_dict", "im_class", "im_func",  "im_self",  "co_code"};

// Filters that read an attribute path of each item through environment.getitem, which a plain Environment
// answers with getattr when the item is missing (jinja2/filters.py make_attrgetter): the filter, and the position
// of the attribute among its positional arguments.
constexpr std::array<std::pair<std::string_view, size_t>, 9> kAttributeFilters = {{{"map", 99},
                                                                                   {"selectattr", 0},
                                                                                   {"rejectattr", 0},
                                                                                   {"sort", 2},
                                                                                   {"unique", 1},
                                                                                   {"min", 1},
                                                                                   {"max", 1},
                                                                                   {"sum", 0},
                                                                                   {"groupby", 0}}};

constexpr size_t kExcerpt = 80;

bool internal_name(std::string_view name) {
  return name.starts_with('_') || std::find(kInternalNames.begin(), kInternalNames.end(), name) != kInternalNames.end();
}

bool format_method(std::string_view name) { return name == "format" || name == "format_map"; }

/// Whether a format string's replacement fields reach no attribute or item (`{}`, `{0}`, `{name:>8}`, never
/// `{0.__class__}` or `{0[x]}`): str.format then only places its arguments.
bool plain_fields(std::string_view format) {
  for (size_t p = 0; p < format.size(); ++p) {
    if (format[p] != '{') continue;
    if (p + 1 < format.size() && format[p + 1] == '{') {
      ++p;
      continue;
    }
    size_t name_end = format.find_first_of("}!:{", p + 1);
    std::string_view name = format.substr(p + 1, name_end == std::string_view::npos ? name_end : name_end - p - 1);
    if (name.find_first_of(".[") != std::string_view::npos) return false;
  }
  return true;
}

/// Walks a parsed template and collects what it does that only an attack needs.
class Judge {
 public:
  Judge(std::string_view text, const std::vector<Stmt>& body) : text_(text), origins_(body) {}

  void statements(const std::vector<Stmt>& body) {
    for (const Stmt& stmt : body) {
      for (const Expr& expr : stmt.exprs) expression(expr);
      if (stmt.kind == StmtKind::kSet || stmt.kind == StmtKind::kWith || stmt.kind == StmtKind::kMacro)
        for (const Expr& expr : stmt.exprs) passed(expr);
      for (const std::vector<Stmt>& nested : stmt.bodies) statements(nested);
    }
  }

  std::vector<TemplateFinding> findings() && { return std::move(findings_); }

 private:
  void report(const Expr& where, std::string construct, size_t offset) {
    if (findings_.size() >= kMaxTemplateFindings) return;
    std::string excerpt(text_.substr(where.begin, std::min(where.end - where.begin, kExcerpt)));
    std::replace_if(
        excerpt.begin(), excerpt.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
    if (where.end - where.begin > kExcerpt) excerpt += "...";
    findings_.push_back({.construct = std::move(construct), .excerpt = std::move(excerpt), .offset = offset});
  }

  void expression(const Expr& expr) {
    for (const Expr& child : expr.children) expression(child);
    switch (expr.kind) {
      case ExprKind::kGetattr:
        if (internal_name(expr.name)) report(expr, fmt::format("attribute '{}'", expr.name), expr.offset);
        break;
      case ExprKind::kGetitem:
        item(expr);
        break;
      case ExprKind::kFilter:
        filter(expr);
        [[fallthrough]];
      case ExprKind::kCall:
      case ExprKind::kTest:
        // a test's subject is only tested (`x.format is defined`); a call's callee and a filter's subject are used
        for (size_t i = expr.kind == ExprKind::kTest ? 1 : 0; i < expr.children.size(); ++i) passed(expr.children[i]);
        break;
      case ExprKind::kList:
      case ExprKind::kTuple:
      case ExprKind::kDict:
        for (const Expr& child : expr.children) passed(child);
        break;
      default:
        break;
    }
  }

  /// `x[key]`: a plain Environment answers a missing item with the attribute of that name.
  void item(const Expr& expr) {
    const Expr& key = expr.children[1];
    if (key.kind == ExprKind::kSlice || key.kind == ExprKind::kTuple) return;  // never an attribute's name
    Origin origin = origins_.of(key);
    if (origin.built) return report(expr, "item name built at render time", key.begin);
    for (const std::string& name : origin.strings)
      if (internal_name(name)) return report(expr, fmt::format("item '{}'", name), key.begin);
  }

  /// A string's format method where it is called or handed on: its fields reach attributes (`{0.__class__}`).
  void passed(const Expr& value) {
    if (value.kind == ExprKind::kAnd || value.kind == ExprKind::kOr || value.kind == ExprKind::kCondition) {
      for (const Expr& child : value.children) passed(child);
      return;
    }
    std::string_view name;
    if (value.kind == ExprKind::kGetattr) name = value.name;
    if (value.kind == ExprKind::kGetitem && value.children[1].kind == ExprKind::kString) name = value.children[1].name;
    if (value.kind == ExprKind::kFilter && value.name == "attr" && value.children.size() > 1 &&
        value.children[1].kind == ExprKind::kString)
      name = value.children[1].name;
    if (!format_method(name)) return;
    const Expr& receiver = value.children[0];
    if (receiver.kind == ExprKind::kString && !receiver.unreadable && plain_fields(receiver.name)) return;
    report(value, fmt::format("a string's {} method, whose fields reach attributes", name), value.offset);
  }

  void filter(const Expr& expr) {
    if (expr.name == "attr") return attr(expr, positional(expr, 0), "attr filter");
    for (auto [name, position] : kAttributeFilters) {
      if (expr.name != name) continue;
      if (name == "map") map(expr);
      for (size_t i = 0; i < expr.keywords.size(); ++i) {
        const std::string& keyword = expr.keywords[i];
        if (keyword == "attribute" || keyword == "*" || keyword == "**") attribute_path(expr, expr.children[i + 1]);
      }
      if (const Expr* path = positional(expr, position)) attribute_path(expr, *path);
    }
  }

  /// `map('attr', name)` is the attr filter on each item; a filter name chosen at render time may be `attr`.
  void map(const Expr& expr) {
    const Expr* filter = positional(expr, 0);
    if (!filter) return;
    if (filter->kind != ExprKind::kString || filter->unreadable)
      return report(expr, "map filter with a filter name chosen at render time", filter->begin);
    if (filter->name == "attr") attr(expr, positional(expr, 1), "map('attr') filter");
  }

  /// The name the attr filter reads: only a literal is judged; one from data or built at render time is not.
  void attr(const Expr& expr, const Expr* name, std::string_view what) {
    if (!name || dynamic_arguments(expr))
      return report(expr, fmt::format("{} with a name passed through *args or **kwargs", what), expr.offset);
    Origin origin = origins_.of(*name);
    if (origin.built) return report(expr, fmt::format("{} with a name built at render time", what), name->begin);
    if (origin.strings.empty() || origin.element_built || !origin.element_strings.empty())
      return report(expr, fmt::format("{} with a name the template does not spell", what), name->begin);
    for (const std::string& spelled : origin.strings)
      if (internal_name(spelled)) return report(expr, fmt::format("{} with name '{}'", what, spelled), name->begin);
  }

  /// An attribute path (`a.b`) a filter reads from each item, judged part by part as an item key.
  void attribute_path(const Expr& expr, const Expr& path) {
    Origin origin = origins_.of(path);
    if (origin.built || origin.element_built)
      return report(expr, fmt::format("{} filter with an attribute built at render time", expr.name), path.begin);
    origin.strings.insert(origin.element_strings.begin(), origin.element_strings.end());
    for (const std::string& spelled : origin.strings) {
      for (size_t start = 0; start <= spelled.size();) {
        size_t dot = std::min(spelled.find('.', start), spelled.size());
        if (internal_name(std::string_view(spelled).substr(start, dot - start)))
          return report(expr, fmt::format("{} filter with attribute '{}'", expr.name, spelled), path.begin);
        start = dot + 1;
      }
    }
  }

  static const Expr* positional(const Expr& expr, size_t index) {
    for (size_t i = 0; i < expr.keywords.size(); ++i) {
      if (!expr.keywords[i].empty()) continue;
      if (index-- == 0) return &expr.children[i + 1];
    }
    return nullptr;
  }

  static bool dynamic_arguments(const Expr& expr) {
    return std::any_of(expr.keywords.begin(), expr.keywords.end(),
                       [](const std::string& keyword) { return keyword == "*" || keyword == "**"; });
  }

  std::string_view text_;
  jinja::Origins origins_;
  std::vector<TemplateFinding> findings_;
};

/// "default" for a file's one template (tokenizer.chat_template, chat_template.jinja); else the name after
/// `chat_template.` in a key ("...!tokenizer.chat_template.tool_use"), or of additional_chat_templates/<name>.jinja.
std::string template_name(const std::string& where) {
  std::filesystem::path path(where);
  if (path.extension() == ".jinja" && path.parent_path().filename() == "additional_chat_templates")
    return path.stem().string();
  size_t bang = where.rfind('!');
  if (bang == std::string::npos) return "default";
  std::string_view key = std::string_view(where).substr(bang + 1);
  constexpr std::string_view kNamed = "chat_template.";
  size_t named = key.find(kNamed);
  return named == std::string_view::npos ? "default" : std::string(key.substr(named + kNamed.size()));
}

}  // namespace

TemplateJudgement judge_chat_template(std::string_view text) {
  jinja::ParsedTemplate parsed = jinja::parse_template(text);
  if (parsed.error) return {.unparsed = fmt::format("{} at offset {}", parsed.error->message, parsed.error->offset)};
  Judge judge(text, parsed.body);
  judge.statements(parsed.body);
  return {.findings = std::move(judge).findings()};
}

void examine_chat_template(std::string_view text, const std::string& where, Safety& safety) {
  TemplateJudgement judgement = judge_chat_template(text);
  if (judgement.unparsed) {
    safety.unverified.push_back(fmt::format(
        "{}: a chat template that precdetect cannot parse as Jinja2 ({}), which a renderer may read otherwise", where,
        *judgement.unparsed));
    return;
  }
  std::string name = template_name(where);
  for (const TemplateFinding& finding : judgement.findings) {
    std::string detail =
        fmt::format("{} at offset {} of template '{}': {}", finding.construct, finding.offset, name, finding.excerpt);
    safety.tampering.push_back(
        {.kind = FileTampering::kTemplateCode, .detail = std::move(detail), .file = where, .offset = finding.offset});
  }
}

}  // namespace precdetect
