#include "precdetect/classify/classifier.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "precdetect/classify/documented_evidence.h"
#include "precdetect/classify/record_evidence.h"

namespace precdetect {
namespace {

Evidence evaluate(const Rule& rule, const ModelSummary& summary) {
  Evidence evidence{.rule = rule.id,
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
Fp16RiskReason range_reason(const Evidence& evidence, const ModelSummary& summary) {
  Fp16RiskReason reason{.kind = Fp16RiskKind::kRange, .rule = evidence.rule};
  const Observation& first = evidence.observations.front();
  reason.value = first.observed.value_or(0.0);
  if (first.stat == Stat::kAbsMax) reason.tensor = summary.abs_max_tensor;
  if (first.stat == Stat::kNormMax) reason.tensor = summary.norm_max_tensor;
  return reason;
}

void add_cast_risks(Verdict& verdict, std::span<const AnalyzedTensor> tensors) {
  for (const AnalyzedTensor& tensor : tensors)
    for (Fp16RiskReason& reason : cast_risks(tensor)) verdict.fp16_risk_reasons.push_back(std::move(reason));
}

}  // namespace

std::string_view verdict_basis_name(VerdictBasis basis) {
  switch (basis) {
    case VerdictBasis::kNone:
      return "none";
    case VerdictBasis::kRanges:
      return "ranges";
    case VerdictBasis::kDocumented:
      return "documented";
    case VerdictBasis::kRecords:
      return "records";
  }
  return "none";
}

std::string Evidence::observed_text() const {
  std::vector<std::string> parts;
  for (const Observation& o : observations)
    if (o.observed) parts.push_back(fmt::format("{} {:.3e}", stat_def(o.stat).key, *o.observed));
  return fmt::format("{}", fmt::join(parts, ", "));
}

void Verdict::admit(std::span<const Label> labels) {
  for (Label label : labels)
    if (std::find(candidates.begin(), candidates.end(), label) == candidates.end()) candidates.push_back(label);
}

Verdict classify(const ModelSummary& summary, std::span<const AnalyzedTensor> tensors, const RuleSet& rules,
                 Hints hints, const ModelEvidence& model_evidence) {
  Verdict verdict{.hints = std::move(hints)};
  const Evidence* winner = nullptr;
  for (const Rule& rule : rules.rules) verdict.evidence.push_back(evaluate(rule, summary));
  if (model_evidence.adapter) {
    verdict.records.assign(model_evidence.records.begin(), model_evidence.records.end());
    weigh_documented(verdict, model_evidence.documented, nullptr);
    add_cast_risks(verdict, tensors);
    return verdict;
  }
  for (const Evidence& evidence : verdict.evidence) {
    if (!evidence.fired) continue;
    if (evidence.fp16_risk) verdict.fp16_risk_reasons.push_back(range_reason(evidence, summary));
    if (winner == nullptr || evidence.confidence > winner->confidence) winner = &evidence;
  }
  if (winner != nullptr) {
    verdict.label = joined_label(winner->candidates);
    verdict.candidates = winner->candidates;
    verdict.confidence = winner->confidence;
    verdict.decided_by = VerdictBasis::kRanges;
  }
  weigh_records(verdict, model_evidence.records, summary, winner);
  weigh_documented(verdict, model_evidence.documented, winner);
  add_cast_risks(verdict, tensors);
  return verdict;
}

std::optional<std::string> config_dtype(const nlohmann::json& config) {
  if (!config.is_object()) return std::nullopt;
  for (const auto* scope : {&config, config.contains("text_config") ? &config["text_config"] : nullptr}) {
    if (scope == nullptr || !scope->is_object()) continue;
    for (const char* key : {"dtype", "torch_dtype"})
      if (scope->contains(key) && (*scope)[key].is_string()) return (*scope)[key].get<std::string>();
  }
  return std::nullopt;
}

}  // namespace precdetect
