#pragma once
/// A model's documented training precision: the registry entry that names it, and how it was found.

#include <optional>
#include <string>
#include <string_view>

#include "precdetect/classify/model_identity.h"
#include "precdetect/classify/registry.h"

namespace precdetect {

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

}  // namespace precdetect
