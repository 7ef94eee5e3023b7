#include "precdetect/classify/classifier.h"

#include <nlohmann/json.hpp>

#include "precdetect/classify/record_evidence.h"
#include "precdetect/core/text_file.h"

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

}  // namespace

std::string_view verdict_basis_name(VerdictBasis basis) {
  switch (basis) {
    case VerdictBasis::kNone:
      return "none";
    case VerdictBasis::kRanges:
      return "ranges";
    case VerdictBasis::kRecords:
      return "records";
  }
  return "none";
}

Verdict classify(const ModelSummary& summary, std::span<const AnalyzedTensor> tensors, const RuleSet& rules,
                 Hints hints, std::span<const TrainingRecord> records) {
  Verdict verdict{.hints = std::move(hints)};
  const Evidence* winner = nullptr;
  for (const Rule& rule : rules.rules) verdict.evidence.push_back(evaluate(rule, summary));
  for (const Evidence& evidence : verdict.evidence) {
    if (!evidence.fired) continue;
    if (evidence.fp16_risk) verdict.fp16_risk_reasons.push_back(range_reason(evidence, summary));
    if (winner == nullptr || evidence.confidence > winner->confidence) winner = &evidence;
  }
  if (winner != nullptr) {
    verdict.label = winner->label;
    verdict.candidates = winner->candidates;
    verdict.confidence = winner->confidence;
    verdict.decided_by = VerdictBasis::kRanges;
  }
  weigh_records(verdict, records, summary, winner);
  for (const AnalyzedTensor& tensor : tensors)
    for (Fp16RiskReason& reason : cast_risks(tensor)) verdict.fp16_risk_reasons.push_back(std::move(reason));
  return verdict;
}

std::optional<std::string> read_config_dtype(const std::filesystem::path& config_json) {
  try {
    auto config = nlohmann::json::parse(read_text_file(config_json, "config.json"));
    for (const auto* scope : {&config, config.contains("text_config") ? &config["text_config"] : nullptr}) {
      if (scope == nullptr || !scope->is_object()) continue;
      for (const char* key : {"dtype", "torch_dtype"})
        if (scope->contains(key) && (*scope)[key].is_string()) return (*scope)[key].get<std::string>();
    }
  } catch (const std::exception&) {
    // Unreadable or malformed config.json: no hint, and the scan goes on.
  }
  return std::nullopt;
}

}  // namespace precdetect
