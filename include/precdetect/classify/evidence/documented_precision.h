#pragma once
/// A model's documented training precision as verdict evidence: the registry entry that names it, how it was
/// found, and how it weighs against the ranges and the records. It outranks the weight ranges and is outranked by
/// training records (docs/method.md, "Evidence order").

#include <optional>
#include <string>
#include <string_view>

#include "precdetect/classify/model_identity.h"
#include "precdetect/classify/registry.h"

namespace precdetect {

struct Verdict;
struct RuleEvidence;

struct Documented {
  std::string id;  ///< the entry's id that matched; its first id for a config match
  Precision precision = Precision::kFp32;
  Label label = Label::kUnknown;  ///< precision_label(precision)
  Grade grade = Grade::kLow;      ///< the entry's grade, one lower for a config match
  double confidence = 0.0;        ///< grade_confidence(grade)
  MatchKind matched_by = MatchKind::kHubId;
  std::string matched;  ///< what matched: the id, or the config fields ("model_type=bloom, hidden_size=1024")
  /// config.json names another model than the model's own hub id: the documented precision is its base's, which
  /// describes pretraining, not the fine-tune.
  bool base_model = false;
  std::string source;
  std::string quote;
};

/// The registry entry for `identity`, strongest match first: the hub id (typed, else the cache folder's), then
/// `_name_or_path`, then config.json's fields. Ids compare case-insensitively, exact ids before `*` prefixes
/// (the longest first). A config match needs every entry it matches to document the same precision: pythia-1b
/// (bf16) and pythia-1b-deduped (fp16) share one config, so that config matches neither.
std::optional<Documented> find_documented(const Registry& registry, const ModelIdentity& identity);

/// The registry's entry for the base an adapter names (adapter_config.json's base_model_name_or_path), matched
/// as such; nullopt when it names no hub id the registry knows.
std::optional<Documented> find_base_documented(const Registry& registry, const std::string& base_model);

/// Two pieces of evidence that agree: the chance that both are wrong, as if independent, capped below 1.
double agreeing_confidence(double a, double b);

/// Weighs `documented` into `verdict`, which the range rules (`ranges_winner`, nullptr when none fired) and
/// training records have decided already. Records decided: a documented label that differs is a
/// record_not_documented conflict (its label joins the candidates, confidence kConflictConfidence), one that
/// agrees raises the confidence. No records: the documented label decides alone; the fired range rule agreeing
/// raises the confidence, ruling it out is a ranges_not_documented conflict (the rule's candidates join,
/// confidence kConflictConfidence). A documented bf16 precision is an fp16 risk either way. fp8 training is none
/// of the labels: shown, never weighed.
void weigh_documented(Verdict& verdict, const std::optional<Documented>& documented, const RuleEvidence* ranges_winner);

}  // namespace precdetect
