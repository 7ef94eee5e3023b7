#pragma once
/// The Python code a model's loaders import when they load its folder: transformers, sentence-transformers and
/// PEFT each find code (or a module to import) in places of their own, listed per
/// library in safety/code_places.h, with the sources in docs/security.md ("Code the loaders import"). precdetect
/// reads no Python; it names the code and the config key that names it. Code a loader imports only after the user
/// consents (`trust_remote_code=True`, a prompt, an allowlist) makes the model unverified; code some release of a
/// loader imports without asking makes it unsafe; a module the loader would import from the installed packages is
/// judged by name, as a pickle's global.

#include <functional>
#include <string>
#include <vector>

#include "precdetect/discover/discover.h"
#include "precdetect/safety/safety.h"

namespace precdetect {

/// The text of the model's file `name` (a path from the model's root, '/'-separated: "unet/config.json"), read
/// through whatever confines the model's reads; it throws what that reader throws (Error kPathEscape for a link
/// out of the model, kNotFound, kIo).
using ReadModelFile = std::function<std::string(const std::string& name)>;

/// Adds to `safety` the code the loaders would import from the model whose files are `listing` (every file the
/// model holds that a loader may look at, paths from its root, '/'-separated; its root and each folder one level
/// down suffice: no loader looks deeper). Configs are read through `read`, only those in `listing` and only those
/// some library's places need; one that cannot be read is Safety::add_failure (unverified, or path_escape), one that
/// is no JSON names nothing (its loader cannot read it either). Python files at the root that no config names are
/// listed too (code beside the weights, unverified). Never throws Error.
void find_custom_code(const std::vector<std::string>& listing, const ReadModelFile& read, Safety& safety);

/// find_custom_code over `source`: a folder given as the model is listed (its root and each folder one level down,
/// `.git` aside, bounded); beside a single file, or for a remote model, only the text files discovery found
/// (ModelSource::texts_beside). Files are read with net/text_file under the confinement scope the caller holds.
void examine_custom_code(const ModelSource& source, Safety& safety);

}  // namespace precdetect
