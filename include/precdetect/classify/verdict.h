#pragma once
/// Stage 4's answer: a verdict on training precision, with the evidence behind it (judge.h gives it).

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "precdetect/analyze/summary.h"
#include "precdetect/classify/advice.h"
#include "precdetect/classify/conflict.h"
#include "precdetect/classify/evidence/documented_precision.h"
#include "precdetect/classify/fp16_risk.h"
#include "precdetect/classify/rules.h"
#include "precdetect/load/records/training_record.h"

namespace precdetect {

/// One condition of a rule, as evaluated on a model.
struct Observation {
  Stat stat;
  Op op;
  double threshold = 0.0;
  std::optional<double> observed;  ///< nullopt when the model has no such value (no floating tensors)
  bool holds = false;
};

/// One rule, evaluated: every rule appears in the evidence, fired or not.
struct RuleEvidence {
  std::string rule;
  bool fired = false;
  Label label = Label::kUnknown;
  std::vector<Label> candidates;
  double confidence = 0.0;
  std::string basis;  ///< the rule's: how its confidence was computed
  bool fp16_risk = false;
  std::vector<Observation> observations;
  std::string says;
  std::string source;

  /// The observed values of its conditions: "abs_max 7.920e+02, norm_max 9.403e+04".
  std::string observed_text() const;
};

/// How the file was stored: reported beside the verdict, never used as proof of training precision.
struct Hints {
  std::vector<std::string> stored_dtypes;
  std::optional<std::string> config_dtype;  ///< config.json's dtype / torch_dtype
};

/// What decided the verdict's label, weakest first: nothing, the range rules, the documented precision of a known
/// model (registry.h), training records (docs/method.md, "Evidence order").
enum class VerdictBasis { kNone, kRanges, kDocumented, kRecords };

/// "none", "ranges", "documented", "records" (JSON `verdict.decided_by`).
std::string_view verdict_basis_name(VerdictBasis basis);

struct Verdict {
  Label label = Label::kUnknown;  ///< one precision only where evidence decides it; else what is left open
  VerdictBasis decided_by = VerdictBasis::kNone;
  /// The labels the evidence does not rule out, `label` first: range evidence tells fp16 from the rest, never
  /// bf16 from fp32. "unknown" rules out nothing.
  std::vector<Label> candidates = {Label::kFp16, Label::kBf16, Label::kFp32};
  double confidence = 0.0;
  std::vector<Fp16RiskReason> fp16_risk_reasons;  ///< why the model is at risk in fp16, one entry per reason
  bool fp16_risk() const { return !fp16_risk_reasons.empty(); }
  std::vector<RuleEvidence> evidence;    ///< every range rule, fired or not
  std::vector<TrainingRecord> records;   ///< what the training frameworks wrote down, merged across files
  std::optional<Documented> documented;  ///< the registry entry of the model or its base, when one matched
  std::vector<Conflict> conflicts;       ///< where records, documentation and weights disagree, each side in words
  Hints hints;
  /// What to run the model in on the run's GPU class (advice.h); nullopt only for a verdict not judged (a failed
  /// model).
  std::optional<Advice> advice;

  /// Adds the labels not yet among the candidates, after them.
  void admit(std::span<const Label> labels);
};

}  // namespace precdetect
