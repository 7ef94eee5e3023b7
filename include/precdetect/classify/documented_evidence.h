#pragma once
/// The documented precision of a known model as verdict evidence: it outranks the weight ranges and is outranked
/// by training records (docs/method.md, "Evidence order").

#include <optional>

#include "precdetect/classify/classifier.h"

namespace precdetect {

/// Two pieces of evidence that agree: the chance that both are wrong, as if independent, capped below 1.
double agreeing_confidence(double a, double b);

/// Weighs `documented` into `verdict`, which the range rules (`ranges_winner`, nullptr when none fired) and
/// training records have decided already. Records decided: a documented label that differs is a
/// record_not_documented conflict (its label joins the candidates, confidence kConflictConfidence), one that
/// agrees raises the confidence. No records: the documented label decides alone; the fired range rule agreeing
/// raises the confidence, ruling it out is a ranges_not_documented conflict (the rule's candidates join,
/// confidence kConflictConfidence). A documented bf16 precision is an fp16 risk either way. fp8 training is none
/// of the labels: shown, never weighed.
void weigh_documented(Verdict& verdict, const std::optional<Documented>& documented, const Evidence* ranges_winner);

}  // namespace precdetect
