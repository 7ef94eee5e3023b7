#pragma once
/// Is a chat template safe to render? Servers render a model's chat template with Jinja2; in a plain
/// `jinja2.Environment` a template walks from any object to Python's builtins (CVE-2024-34359 in
/// llama-cpp-python, CVE-2026-5760 in SGLang), which `ImmutableSandboxedEnvironment` refuses. The template is
/// parsed as Jinja2 (jinja_parser.h) and every construct the sandbox refuses, or that builds an attribute or item
/// name at render time, is reported (docs/security.md, "Chat templates").

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "precdetect/safety/safety.h"

namespace precdetect {

/// One construct of a template that only an attack needs.
struct TemplateFinding {
  std::string construct;  ///< in words: "attribute '__class__'", "item name built at render time"
  std::string excerpt;    ///< the expression it is in, as written (`x['__cla' ~ 'ss__']`), at most 80 bytes and "..."
  size_t offset = 0;      ///< byte offset in the template's text
};

struct TemplateJudgement {
  std::vector<TemplateFinding> findings;  ///< at most kMaxTemplateFindings, in the template's order
  /// Why the template could not be parsed ("unexpected '}' at offset 12"): not judged, never safe.
  std::optional<std::string> unparsed;
};

/// Findings past this many are dropped: one is enough to call the template unsafe.
constexpr size_t kMaxTemplateFindings = 16;

/// Judges a template's text. Reported: an attribute (`.x`, `attr('x')`, a filter's `attribute=`) or a literal item
/// key whose name starts with `_` (the sandbox's rule) or is one of the internals it refuses (`mro`, `gi_frame`,
/// `f_globals`, `func_globals`, ...); a string's `format` or `format_map` called or passed on (unless on a literal
/// whose fields name no attribute or item); the `attr` filter with a name that is not a literal; an item key or a
/// filter's attribute name assembled at render time (template_origins.h). Never throws but std::bad_alloc.
TemplateJudgement judge_chat_template(std::string_view text);

/// Judges `text`, the template at `where` ("tokenizer_config.json!chat_template",
/// "model.gguf!tokenizer.chat_template.tool_use", "chat_template.jinja"), into `safety`: each finding a
/// FileTampering::kTemplateCode whose detail names the construct, the template ("default", "tool_use") and the
/// offset; an unparsable template unverified.
void examine_chat_template(std::string_view text, const std::string& where, Safety& safety);

}  // namespace precdetect
