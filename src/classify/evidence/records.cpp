#include "precdetect/classify/evidence/records.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

namespace precdetect {
namespace {

/// The labels in kLabels' order.
std::vector<Label> ordered(const std::set<Label>& labels) {
  std::vector<Label> list;
  for (Label label : kLabels)
    if (labels.count(label)) list.push_back(label);
  return list;
}

/// The half-precision dtypes the parameters are stored in, when no parameter is stored wider.
std::vector<std::string> half_storage(const ModelSummary& summary) {
  std::vector<std::string> half;
  for (const auto& [name, census] : summary.census) {
    std::optional<DType> dtype = parse_dtype(name);
    if (dtype == DType::F32 || dtype == DType::F64) return {};
    if (dtype == DType::F16 || dtype == DType::BF16) half.push_back(name);
  }
  return half;
}

}  // namespace

double record_confidence(Label label) { return label == Label::kFp32 ? 0.9 : 0.95; }

void weigh_records(Verdict& verdict, std::span<const TrainingRecord> records, const ModelSummary& summary,
                   const RuleEvidence* winner) {
  if (records.empty()) return;
  verdict.records.assign(records.begin(), records.end());
  std::set<Label> recorded;
  for (const TrainingRecord& record : records) recorded.insert(record.label);
  verdict.decided_by = VerdictBasis::kRecords;
  if (recorded.size() > 1) {
    std::vector<std::string> sides;
    for (const TrainingRecord& record : records)
      sides.push_back(fmt::format("{} ({})", record.label, record_text(record)));
    verdict.conflicts.push_back(
        {ConflictKind::kRecordsDisagree, fmt::format("the records disagree: {}", fmt::join(sides, "; "))});
    verdict.label = Label::kUnknown;
    verdict.candidates = ordered(recorded);
    verdict.confidence = 0.0;
    return;
  }
  const TrainingRecord& record = records.front();
  verdict.label = record.label;
  verdict.candidates = {record.label};
  verdict.confidence = record_confidence(record.label);
  if (winner &&
      std::find(winner->candidates.begin(), winner->candidates.end(), record.label) == winner->candidates.end()) {
    verdict.conflicts.push_back(
        {ConflictKind::kRangesDisagree,
         fmt::format("recorded {} ({}), but range rule {} says {} ({}): the record describes the run that saved "
                     "this checkpoint, often a fine-tune, while the ranges also reflect pretraining",
                     record.label, record_text(record), winner->rule, fmt::join(winner->candidates, "|"),
                     winner->observed_text())});
    verdict.admit(winner->candidates);
    verdict.confidence = kConflictConfidence;
  }
  if (std::vector<std::string> half = half_storage(summary);
      record.label == Label::kFp32 && !half.empty() && !saves_weights_in_half(record.kind)) {
    verdict.conflicts.push_back(
        {ConflictKind::kStoredInHalf,
         fmt::format("recorded fp32 ({}), but the parameters are stored in {}: the run may have trained in half "
                     "precision outright (weights loaded so, no mixed-precision flag), or they were cast after "
                     "training",
                     record_text(record), fmt::join(half, ", "))});
    std::vector<Label> stored;
    for (const std::string& name : half) stored.push_back(name == "BF16" ? Label::kBf16 : Label::kFp16);
    verdict.admit(stored);
    verdict.confidence = kConflictConfidence;
  }
}

}  // namespace precdetect
