#pragma once
/// Stage 4: a verdict on training precision, with the evidence behind it.

#include <optional>
#include <string>
#include <vector>

#include "precdetect/analyze/summary.h"
#include "precdetect/classify/rules.h"

namespace precdetect {

/// One condition of a rule, as evaluated on a model.
struct Observation {
  std::string stat;
  std::string op;
  double threshold = 0.0;
  std::optional<double> observed;  ///< nullopt when the model has no such value (no floating tensors)
  bool holds = false;
};

/// One rule, evaluated: every rule appears in the evidence, fired or not.
struct Evidence {
  std::string rule;
  bool fired = false;
  std::string label;
  double confidence = 0.0;
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

struct Verdict {
  std::string label = "unknown";  ///< fp16 | bf16 | fp32 | unknown
  double confidence = 0.0;
  bool fp16_risk = false;
  std::vector<Evidence> evidence;
  Hints hints;
};

/// The fired rule with the highest confidence (the first on ties) gives label and confidence; fp16_risk is true
/// when any fired rule says so. No fired rule, or no floating values at all, gives "unknown".
Verdict classify(const ModelSummary& summary, const RuleSet& rules, Hints hints);

/// config.json's declared dtype: "dtype", then "torch_dtype", then the same inside "text_config".
/// nullopt when absent or unreadable (a hint is never worth failing a scan for).
std::optional<std::string> read_config_dtype(const std::filesystem::path& config_json);

}  // namespace precdetect
