#pragma once
/// Classification rules: threshold conditions on model statistics, read from a documented JSON file
/// (docs/rules.md). The built-in default is src/classify/default_rules.json, embedded at build time.

#include <filesystem>
#include <string>
#include <vector>

#include "precdetect/analyze/buffer_names.h"
#include "precdetect/classify/stat.h"
#include "precdetect/core/label.h"

namespace precdetect {

struct Condition {
  Stat stat;  ///< a statistic of the parameters' summary (classify/stat.h lists them)
  Op op;
  double value = 0.0;
};

struct Rule {
  std::string id;
  std::vector<Condition> when;    ///< all must hold for the rule to fire
  Label label = Label::kUnknown;  ///< the precision its source ties it to (seed 000: the group it describes)
  /// The precisions the rule's evidence does not rule out, `label` first (range: bf16 or fp32; fp16 or fp32):
  /// what a verdict the rule decides claims, as one label (joined_label).
  std::vector<Label> candidates;
  double confidence = 0.0;  ///< in [0, 1]: how often its candidates held the truth among the labelled models
  std::string basis;        ///< how the confidence was computed ("20 of 20 labelled models ..."); may be empty
  bool fp16_risk = false;
  std::string says;    ///< what a firing means, in a sentence
  std::string source;  ///< where the threshold comes from
};

struct RuleSet {
  std::string name;
  std::vector<Rule> rules;
  BufferNames buffers;  ///< the file's `buffers` list; the built-in list when the file has none
};

/// The text of the built-in rules file.
const std::string& default_rules_json();
/// The built-in rules.
const RuleSet& default_rules();
/// Parses rules text (a `--rules` file's, app/rule_files); `origin` names it in errors. Throws Error(kInvalidRules)
/// naming the file and the offending rule.
RuleSet parse_rules(const std::string& text, const std::filesystem::path& origin);

}  // namespace precdetect
