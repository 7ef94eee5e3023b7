#pragma once
/// What the CI formats report (SARIF, GitHub annotations, JUnit, GitLab Code Quality): a scan report's findings,
/// each under a rule whose id is built from the vocabulary's own names (tampering kinds, fp16 risk kinds, gates),
/// with the weight file it is about, relative to a root, and a fingerprint that holds across runs and checkouts.
/// Every CI format renders from this one list, and the list from the ScanReport the JSON document is written from.

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "precdetect/report/report.h"

namespace precdetect {

/// How much a finding matters, in SARIF's words; each CI format maps it to its own.
enum class FindingLevel { kNote, kWarning, kError };

/// "note", "warning", "error" (SARIF's `level`).
std::string_view finding_level_name(FindingLevel level);

/// A kind of finding: its id and what every finding under it shares.
struct FindingRule {
  /// "safety/unsafe-import", "safety/tampering/<kind>", "safety/unsafe", "safety/unverified", "fp16-risk/<kind>",
  /// "tensor/non-finite", "gate/<name>", "model/unreadable": the kinds by their names in the JSON document.
  std::string id;
  FindingLevel level = FindingLevel::kWarning;
  /// GitHub's security-severity (0.1 to 10) for the safety rules, which makes them security alerts; 0 otherwise.
  double security_severity = 0;
  std::string title;  ///< one line: "Pickle tampering: state on code"
  std::string help;   ///< what it means and what to do, naming the docs page
  /// The model could not be scanned: a tool execution notification in SARIF rather than a result.
  bool notification = false;
};

struct Finding {
  size_t rule = 0;      ///< index into Findings::rules
  size_t model = 0;     ///< index into ScanReport::models
  std::string message;  ///< what was found and where, in words
  /// The weight file it is about, relative to the root ('/'-separated, `..` where it lies outside); the input as
  /// typed when the model resolved to no file.
  std::string path;
  /// 16 hex digits hashing the rule, `path` and a stable detail (the global, tensor, member or offset): no absolute
  /// path, no time, so the same across runs and checkouts.
  std::string fingerprint;
};

struct Findings {
  std::vector<FindingRule> rules;  ///< the rules the findings use, in first-use order
  std::vector<Finding> findings;   ///< by model in report order: unreadable, safety, fp16 risk, tensors, gates
};

/// The report's findings: every dangerous import and tampering (any verdict `unsafe` without one as
/// safety/unsafe, so a new kind of finding is never dropped), an `unverified` verdict, each fp16 risk reason, each
/// tensor holding NaN or Inf, each gate failure, each model that could not be read. Paths are relative to `root`
/// (empty: the current directory).
Findings collect_findings(const ScanReport& report, const std::filesystem::path& root);

}  // namespace precdetect
