#pragma once
/// Stage 4: a verdict on training precision, with the evidence behind it.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "precdetect/analyze/summary.h"
#include "precdetect/classify/conflict.h"
#include "precdetect/classify/fp16_risk.h"
#include "precdetect/classify/rules.h"
#include "precdetect/load/training_record.h"

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
};

/// How the file was stored: reported beside the verdict, never used as proof of training precision.
struct Hints {
  std::vector<std::string> stored_dtypes;
  std::optional<std::string> config_dtype;  ///< config.json's dtype / torch_dtype
};

/// What decided the verdict's label: training records (they outrank ranges), the range rules, or nothing.
enum class VerdictBasis { kNone, kRanges, kRecords };

/// "none", "ranges", "records" (JSON `verdict.decided_by`).
std::string_view verdict_basis_name(VerdictBasis basis);

struct Verdict {
  Label label = Label::kUnknown;
  VerdictBasis decided_by = VerdictBasis::kNone;
  /// The labels the evidence does not rule out, `label` first: range evidence tells fp16 from the rest, never
  /// bf16 from fp32. "unknown" rules out nothing.
  std::vector<Label> candidates = {Label::kFp16, Label::kBf16, Label::kFp32};
  double confidence = 0.0;
  std::vector<Fp16RiskReason> fp16_risk_reasons;  ///< why the model is at risk in fp16, one entry per reason
  bool fp16_risk() const { return !fp16_risk_reasons.empty(); }
  std::vector<Evidence> evidence;       ///< every range rule, fired or not
  std::vector<TrainingRecord> records;  ///< what the training frameworks wrote down, merged across files
  std::vector<Conflict> conflicts;      ///< where records and weights disagree, each side in words
  Hints hints;
};

/// The rules see the parameters' summary: the fired rule with the highest confidence (the first on ties) gives
/// label, candidates and confidence; no fired rule, or no floating values at all, gives "unknown". Training
/// records, when there are any, then decide instead (record_evidence.h). fp16_risk is true when a fired rule
/// says so (a `range` reason) or when casting one of `tensors`, parameter or buffer, to fp16 overflows or
/// flushes most of it to zero (fp16_risk.h).
Verdict classify(const ModelSummary& summary, std::span<const AnalyzedTensor> tensors, const RuleSet& rules,
                 Hints hints, std::span<const TrainingRecord> records = {});

/// config.json's declared dtype: "dtype", then "torch_dtype", then the same inside "text_config".
/// nullopt when absent or unreadable (a hint is never worth failing a scan for).
std::optional<std::string> read_config_dtype(const std::filesystem::path& config_json);

}  // namespace precdetect
