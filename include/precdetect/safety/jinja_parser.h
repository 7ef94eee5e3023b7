#pragma once
/// Jinja2's parser (jinja2/parser.py) over jinja_lexer's tokens: a recursive descent of its grammar, which the
/// chat-template judge walks. Bounded for hostile input: the template's size, how deeply statements and
/// expressions nest.

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "precdetect/safety/jinja_ast.h"
#include "precdetect/safety/jinja_lexer.h"

namespace precdetect::jinja {

/// Far above any real chat template (the largest of llama.cpp's models/templates is 17 KB).
constexpr size_t kMaxTemplateBytes = size_t{1} << 20;

struct ParsedTemplate {
  std::vector<Stmt> body;
  /// Why the template is not Jinja2 that precdetect reads (jinja2 would refuse it too, or it is past
  /// kMaxTemplateBytes or jinja_tokens.h's kMaxNesting, or not UTF-8); `body` is then empty.
  std::optional<SyntaxError> error;
};

/// `source` parsed as jinja2's default Environment parses it, with the extensions chat-template renderers enable
/// (loopcontrols' `break` and `continue`, transformers' `generation` block) and jinja2.ext.do's `do`. Never
/// throws (but std::bad_alloc); what it cannot parse is `error`.
ParsedTemplate parse_template(std::string_view source);

}  // namespace precdetect::jinja
