#pragma once
/// The rules and the registry a run judges by: the built-in ones, or the files --rules and --registry name, read
/// here (classify only parses their text).

#include "precdetect/app/options.h"
#include "precdetect/classify/registry.h"
#include "precdetect/classify/rules.h"

namespace precdetect {

/// --rules' file, or the built-in rules. Throws Error: kNotFound or kIo (the file), kInvalidRules.
RuleSet run_rules(const ScanOptions& options);

/// --registry's file, or the built-in registry. Throws Error: kNotFound or kIo (the file), kInvalidRegistry.
Registry run_registry(const ScanOptions& options);

}  // namespace precdetect
