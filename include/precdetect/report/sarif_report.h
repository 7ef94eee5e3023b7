#pragma once
/// --format sarif: SARIF 2.1.0 as GitHub code scanning takes it (docs/using.md, "CI systems"): one rule per kind of
/// finding, one result per finding on its weight file (a region of line 1: GitHub has none for binary files), and
/// each model that could not be read as a tool execution notification.

#include <filesystem>
#include <nlohmann/json.hpp>

#include "precdetect/report/report.h"

namespace precdetect {

/// The SARIF log of `report`'s findings (report/findings.h), paths relative to `root` (empty: the current
/// directory). `invocations[0].executionSuccessful` is false when a model could not be read.
nlohmann::ordered_json sarif_json(const ScanReport& report, const std::filesystem::path& root);

}  // namespace precdetect
