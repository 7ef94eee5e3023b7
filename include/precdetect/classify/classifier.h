#pragma once
/// Stage 4: a verdict on training precision, with the evidence behind it.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "precdetect/analyze/summary.h"
#include "precdetect/classify/conflict.h"
#include "precdetect/classify/documented.h"
#include "precdetect/classify/fp16_risk.h"
#include "precdetect/classify/rules.h"
#include "precdetect/classify/training_record.h"

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
struct Evidence {
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
  std::vector<Evidence> evidence;        ///< every range rule, fired or not
  std::vector<TrainingRecord> records;   ///< what the training frameworks wrote down, merged across files
  std::optional<Documented> documented;  ///< the registry entry of the model or its base, when one matched
  std::vector<Conflict> conflicts;       ///< where records, documentation and weights disagree, each side in words
  Hints hints;

  /// Adds the labels not yet among the candidates, after them.
  void admit(std::span<const Label> labels);
};

/// What a model's files say about it beside the weights: training records and the documented precision.
struct ModelEvidence {
  std::span<const TrainingRecord> records;
  std::optional<Documented> documented;
  /// The weights are an adapter's (classify/adapter.h): its ranges and records describe the adapter's training,
  /// never its base's pretraining, so they are shown and never decide; `documented` is its base's.
  bool adapter = false;
};

/// The rules see the parameters' summary: the fired rule with the highest confidence (the first on ties) gives
/// candidates and confidence, and as label what its candidates leave open (two candidates: a two-label value such
/// as fp16|fp32, never one precision the ranges cannot decide); no fired rule, or no floating values at all, gives
/// "unknown". A documented precision, then training records, decide instead when there are any (documented_evidence.h,
/// record_evidence.h). An adapter's verdict comes from its base's documented precision alone (`unknown` without
/// one), its rules and records listed as evidence only. fp16_risk is true when a fired rule says so (a `range` reason),
/// when the model or its base is documented as bf16-pretrained (`documented`), or when casting one of `tensors`,
/// parameter or buffer, to fp16 overflows or flushes most of it to zero (fp16_risk.h).
Verdict classify(const ModelSummary& summary, std::span<const AnalyzedTensor> tensors, const RuleSet& rules,
                 Hints hints, const ModelEvidence& evidence = {});

/// config.json's declared dtype: "dtype", then "torch_dtype", then the same inside "text_config". nullopt when
/// absent (config is null when there is no readable config.json: a hint is never worth failing a scan for).
std::optional<std::string> config_dtype(const nlohmann::json& config);

}  // namespace precdetect
