#pragma once
/// Training records as verdict evidence. They outrank the range rules: a record is what the run itself wrote
/// down, a range only what its weights suggest (docs/method.md, "Evidence order").

#include <span>

#include "precdetect/classify/verdict.h"

namespace precdetect {

/// The confidence of a recorded precision: a half-precision flag is what the run trained with; an fp32 record
/// rests on flags that were not set, and a run can still have loaded its weights in half precision without one.
double record_confidence(Label label);

/// The confidence left when a record and the weights disagree: both are shown and neither wins outright.
inline constexpr double kConflictConfidence = 0.5;

/// Decides `verdict` by `records`, when there are any (the range rules have decided it already; `ranges_winner`
/// is the fired rule that did, nullptr when none fired). One recorded precision gives the label, alone among the
/// candidates; records of several precisions give "unknown" with those candidates. A recorded label the winning
/// rule rules out, or an fp32 record for parameters stored in fp16 or bf16, is a conflict: the other side's
/// labels join the candidates and the confidence falls to kConflictConfidence.
void weigh_records(Verdict& verdict, std::span<const TrainingRecord> records, const ModelSummary& summary,
                   const RuleEvidence* ranges_winner);

}  // namespace precdetect
