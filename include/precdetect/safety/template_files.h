#pragma once
/// The chat templates a model's folder carries beside its weights, found and handed to the chat-template judge
/// (chat_template.h), as transformers' tokenizers and processors load them.

#include "precdetect/discover/discover.h"
#include "precdetect/safety/safety.h"

namespace precdetect {

/// Judges every chat template among `source.texts_beside` into `safety` (examine_chat_template):
/// tokenizer_config.json's `chat_template` (a string, or a list of `{"name", "template"}`), chat_template.jinja and
/// additional_chat_templates/<name>.jinja (the file's text) and chat_template.json (`{"chat_template": ...}`, as
/// tokenizer_config.json's). Each is named `<file>!chat_template` (`<file>!chat_template.<name>` in a list; the file
/// itself for a .jinja). A file that cannot be read (net/text_file.h's bounds, confinement), or whose JSON or
/// `chat_template` is malformed, is unverified (Safety::add_failure). Never throws (but std::bad_alloc).
void examine_templates_beside(const ModelSource& source, Safety& safety);

}  // namespace precdetect
