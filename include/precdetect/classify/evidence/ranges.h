#pragma once
/// The range rules as verdict evidence: what the parameters' statistics say about the range they were learned in
/// (docs/rules.md). The weakest evidence that decides: records and documented precisions outrank it.

#include "precdetect/analyze/summary.h"
#include "precdetect/classify/rules.h"
#include "precdetect/classify/verdict.h"

namespace precdetect {

/// Every rule evaluated on `summary`, fired or not, in the rule set's order.
std::vector<RuleEvidence> evaluate_rules(const RuleSet& rules, const ModelSummary& summary);

/// Decides `verdict` by its evaluated rules: the fired rule with the highest confidence (the first on ties)
/// gives candidates and confidence, and as label what its candidates leave open (two candidates: a two-label value
/// such as fp16|fp32, never one precision the ranges cannot decide). Each fired rule that says fp16_risk is a
/// `range` reason. Returns the winner, nullptr when no rule fired (the verdict stays "unknown").
const RuleEvidence* decide_by_ranges(Verdict& verdict, const ModelSummary& summary);

}  // namespace precdetect
