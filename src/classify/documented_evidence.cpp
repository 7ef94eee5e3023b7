#include "precdetect/classify/documented_evidence.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

#include "precdetect/classify/record_evidence.h"

namespace precdetect {
namespace {

/// "documented bf16 for EleutherAI/pythia-1b (grade high: the EleutherAI/pythia README ...)", naming a base as
/// such.
std::string documented_text(const Documented& documented) {
  return fmt::format("documented {} for {}{} (grade {}: {})", documented.precision,
                     documented.base_model ? "its base model " : "", documented.id, documented.grade,
                     documented.source);
}

void decide_over_ranges(Verdict& verdict, const Documented& documented, const Evidence* winner) {
  verdict.decided_by = VerdictBasis::kDocumented;
  verdict.label = documented.label;
  verdict.candidates = {documented.label};
  verdict.confidence = documented.confidence;
  if (winner == nullptr) return;
  const std::vector<Label>& ranges = winner->candidates;
  if (std::find(ranges.begin(), ranges.end(), documented.label) != ranges.end()) {
    verdict.confidence = agreeing_confidence(documented.confidence, winner->confidence);
    return;
  }
  verdict.conflicts.push_back(
      {ConflictKind::kRangesNotDocumented,
       fmt::format("{}, but range rule {} says {} ({}): the weights were changed after pretraining (a fine-tune, "
                   "a conversion), or the entry does not describe this checkpoint",
                   documented_text(documented), winner->rule, fmt::join(ranges, "|"), winner->observed_text())});
  verdict.admit(ranges);
  verdict.confidence = kConflictConfidence;
}

void weigh_against_records(Verdict& verdict, const Documented& documented) {
  if (verdict.label == Label::kUnknown) return;  // the records disagree among themselves: shown already
  if (verdict.label == documented.label) {
    verdict.confidence = agreeing_confidence(verdict.confidence, documented.confidence);
    return;
  }
  verdict.conflicts.push_back(
      {ConflictKind::kRecordNotDocumented,
       fmt::format("recorded {} ({}), but {}: the record describes the run that saved this checkpoint, often a "
                   "fine-tune in another precision than pretraining",
                   verdict.label, record_text(verdict.records.front()), documented_text(documented))});
  verdict.admit(std::array{documented.label});
  verdict.confidence = kConflictConfidence;
}

}  // namespace

double agreeing_confidence(double a, double b) { return std::min(0.99, 1.0 - (1.0 - a) * (1.0 - b)); }

void weigh_documented(Verdict& verdict, const std::optional<Documented>& documented, const Evidence* winner) {
  if (!documented) return;
  verdict.documented = documented;
  if (documented->label == Label::kUnknown) return;
  if (documented->label == Label::kBf16)
    verdict.fp16_risk_reasons.push_back({.kind = Fp16RiskKind::kDocumented, .rule = documented->id});
  if (verdict.decided_by == VerdictBasis::kRecords)
    weigh_against_records(verdict, *documented);
  else
    decide_over_ranges(verdict, *documented, winner);
}

}  // namespace precdetect
