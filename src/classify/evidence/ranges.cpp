#include "precdetect/classify/evidence/ranges.h"

namespace precdetect {
namespace {

RuleEvidence evaluate(const Rule& rule, const ModelSummary& summary) {
  RuleEvidence evidence{.rule = rule.id,
                        .fired = true,
                        .label = rule.label,
                        .candidates = rule.candidates,
                        .confidence = rule.confidence,
                        .basis = rule.basis,
                        .fp16_risk = rule.fp16_risk,
                        .says = rule.says,
                        .source = rule.source};
  for (const Condition& condition : rule.when) {
    Observation observation{.stat = condition.stat,
                            .op = condition.op,
                            .threshold = condition.value,
                            .observed = stat_def(condition.stat).read(summary)};
    observation.holds = observation.observed && holds(*observation.observed, condition.op, condition.value);
    evidence.fired = evidence.fired && observation.holds;
    evidence.observations.push_back(observation);
  }
  return evidence;
}

/// A fired rule that says fp16_risk, as a reason: its first condition's observation, and the parameter that
/// holds it when the statistic is a maximum.
Fp16RiskReason range_reason(const RuleEvidence& evidence, const ModelSummary& summary) {
  Fp16RiskReason reason{.kind = Fp16RiskKind::kRange, .rule = evidence.rule};
  const Observation& first = evidence.observations.front();
  reason.value = first.observed.value_or(0.0);
  if (first.stat == Stat::kAbsMax) reason.tensor = summary.abs_max_tensor;
  if (first.stat == Stat::kNormMax) reason.tensor = summary.norm_max_tensor;
  return reason;
}

}  // namespace

std::vector<RuleEvidence> evaluate_rules(const RuleSet& rules, const ModelSummary& summary) {
  std::vector<RuleEvidence> evaluated;
  for (const Rule& rule : rules.rules) evaluated.push_back(evaluate(rule, summary));
  return evaluated;
}

const RuleEvidence* decide_by_ranges(Verdict& verdict, const ModelSummary& summary) {
  const RuleEvidence* winner = nullptr;
  for (const RuleEvidence& evidence : verdict.evidence) {
    if (!evidence.fired) continue;
    if (evidence.fp16_risk) verdict.fp16_risk_reasons.push_back(range_reason(evidence, summary));
    if (winner == nullptr || evidence.confidence > winner->confidence) winner = &evidence;
  }
  if (winner == nullptr) return nullptr;
  verdict.label = joined_label(winner->candidates);
  verdict.candidates = winner->candidates;
  verdict.confidence = winner->confidence;
  verdict.decided_by = VerdictBasis::kRanges;
  return winner;
}

}  // namespace precdetect
