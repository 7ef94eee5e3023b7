#pragma once
/// The registry of known models: the training precision their authors documented, each entry with its source and
/// a grade (docs/method.md, "Documented precision"). The built-in registry is src/classify/registry.json,
/// embedded at build time; --registry replaces it.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "precdetect/core/label.h"
#include "precdetect/core/named_enum.h"

namespace precdetect {

/// A training precision as the sources state it: the mixed variants keep fp32 master weights.
enum class Precision { kFp16, kFp16Mixed, kBf16, kBf16Mixed, kFp32, kFp8Mixed };

/// "fp16", "fp16-mixed", "bf16", "bf16-mixed", "fp32", "fp8-mixed" (registry files, JSON).
std::string_view precision_name(Precision precision);
std::optional<Precision> parse_precision(std::string_view name);

/// The verdict label a documented precision stands for: the range the weights were learned in. fp8 training
/// is none of precdetect's labels: kUnknown.
Label precision_label(Precision precision);

/// How far a source can be trusted: a primary text read (high), a primary source at family level or indirect
/// (medium), a secondary compilation or an inference (low).
enum class Grade { kHigh, kMedium, kLow };

/// "high", "medium", "low".
std::string_view grade_name(Grade grade);
std::optional<Grade> parse_grade(std::string_view name);

/// The confidence a documented precision of this grade gives the verdict.
double grade_confidence(Grade grade);

struct RegistryEntry {
  /// Hub ids ("EleutherAI/pythia-1b"; legacy ones without an org, "t5-small"); a trailing `*` matches every id
  /// that starts with what precedes it ("google/flan-t5-*").
  std::vector<std::string> ids;
  /// Fine-tunes the same authors released of these models (instruct, chat): their pretraining is the entry's, so
  /// they match it as a base (Documented::base_model). Same spelling as `ids`.
  std::vector<std::string> variants;
  Precision precision = Precision::kFp32;
  Grade grade = Grade::kLow;
  std::string source;  ///< a URL, or repo:path, or an issue: where the precision is stated
  std::string quote;   ///< the source's words, when they say it outright; may be empty
  /// config.json fields whose values single out these models within their family ("model_type", size fields);
  /// empty when the entry matches by id only.
  nlohmann::json config = nlohmann::json::object();
  size_t line = 0;  ///< where the entry starts in its file
};

struct Registry {
  std::string origin;  ///< "<built-in registry>" or the file's path
  std::vector<RegistryEntry> entries;
};

/// The text of the built-in registry file.
const std::string& default_registry_json();
/// The built-in registry.
const Registry& default_registry();
/// Parses registry text (a `--registry` file's, app/rule_files); `origin` names it in errors. Every entry needs ids,
/// a precision, a grade and a source; an id listed twice is an error. Throws Error(kInvalidRegistry) naming the file
/// and the line.
Registry parse_registry(const std::string& text, const std::string& origin);

}  // namespace precdetect

template <>
struct fmt::formatter<precdetect::Precision>
    : precdetect::NamedEnumFormatter<precdetect::Precision, precdetect::precision_name> {};
template <>
struct fmt::formatter<precdetect::Grade> : precdetect::NamedEnumFormatter<precdetect::Grade, precdetect::grade_name> {};
