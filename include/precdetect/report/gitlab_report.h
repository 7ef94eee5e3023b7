#pragma once
/// --format gitlab: GitLab's Code Quality report (`artifacts:reports:codequality`), the subset of the Code Climate
/// spec GitLab reads: one issue per finding with description, check_name, fingerprint, severity, location.path
/// and location.lines.begin.

#include <filesystem>
#include <nlohmann/json.hpp>

#include "precdetect/report/report.h"

namespace precdetect {

/// The JSON array of `report`'s findings (report/findings.h), paths relative to `root` (empty: the current
/// directory). Severity: `critical` for the safety rules that make a model unsafe, `major` for the other errors
/// (gate failures, a model that could not be read), `minor` for warnings, `info` for notes.
nlohmann::ordered_json gitlab_json(const ScanReport& report, const std::filesystem::path& root);

}  // namespace precdetect
