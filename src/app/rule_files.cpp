#include "precdetect/app/rule_files.h"

#include "precdetect/net/text_file.h"

namespace precdetect {

RuleSet run_rules(const ScanOptions& options) {
  if (!options.rules) return default_rules();
  return parse_rules(read_text_file(*options.rules, "rules file", TextOrigin::kUserFile), *options.rules);
}

Registry run_registry(const ScanOptions& options) {
  if (!options.registry) return default_registry();
  return parse_registry(read_text_file(*options.registry, "registry file", TextOrigin::kUserFile),
                        options.registry->string());
}

}  // namespace precdetect
