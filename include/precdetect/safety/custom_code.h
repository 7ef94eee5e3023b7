#pragma once
/// The Python code a model asks its loader to import and run: transformers does with `trust_remote_code=True`,
/// which many wrappers pass for the user. precdetect reads no Python; it names the code, which makes the model
/// unverified (docs/security.md).

#include <filesystem>
#include <string_view>
#include <vector>

#include "precdetect/safety/safety.h"

namespace precdetect {

/// The classes a transformers config names for `trust_remote_code` (`auto_map`: `"AutoModel":
/// "modeling_x.XModel"`, a [slow, fast] pair, or `"org/repo--modeling_x.XModel"` from another repository;
/// `custom_pipelines`: each task's `impl`), grouped by the Python file that holds them. `config` is the JSON text
/// of `file_name` (config.json, tokenizer_config.json); text that is no JSON object names nothing.
std::vector<CustomCode> custom_code_named(std::string_view config, std::string_view file_name);

/// Adds to `safety.custom_code` what `texts` (ModelSource::texts_beside) name: the classes their configs name, and
/// each Python file beside the weights, with the classes named from it. A config that cannot be read is unverified.
void examine_custom_code(const std::vector<std::filesystem::path>& texts, Safety& safety);

}  // namespace precdetect
