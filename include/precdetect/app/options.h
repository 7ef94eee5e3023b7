#pragma once
/// Everything a run needs, validated: the CLI's only product.

#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace precdetect {

/// Documented in docs/using.md and --help.
enum class ExitCode : int {
  kSuccess = 0,     ///< every model scanned (and every gate passed)
  kGateFailed = 1,  ///< a gate failed (gates come with batch scans)
  kError = 2,       ///< a usage error, or a model that could not be scanned
};

struct TensorFilter {
  std::optional<std::regex> include;
  std::optional<std::regex> exclude;
  /// True when `name` matches --include (if any) and not --exclude (if any); regex_search semantics.
  bool selects(const std::string& name) const;
};

struct ScanOptions {
  std::vector<std::string> inputs;
  bool json = false;                            ///< the JSON document on stdout instead of the table
  std::optional<std::filesystem::path> output;  ///< also write the JSON document here, atomically
  bool verbose = false;                         ///< per-tensor rows in the table
  std::string device = "auto";
  TensorFilter filter;
  std::optional<std::filesystem::path> rules;
};

}  // namespace precdetect
