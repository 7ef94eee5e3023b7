#pragma once
/// --format github (and --annotate under GitHub Actions): the findings as workflow-command annotations
/// (`::error file=...,line=1,title=...::message`), escaped as the actions toolkit escapes them.

#include <filesystem>
#include <string>
#include <string_view>

#include "precdetect/report/report.h"

namespace precdetect {

/// GitHub shows at most this many annotations of each type (error, warning, notice) per step and drops the rest
/// (actions/toolkit docs/problem-matchers.md).
inline constexpr size_t kAnnotationsPerType = 10;

/// The toolkit's escapeData (packages/core/src/command.ts): '%', CR and LF as %25, %0D, %0A.
std::string escape_annotation_data(std::string_view text);

/// The toolkit's escapeProperty: escapeData, and ':' and ',' as %3A and %2C.
std::string escape_annotation_property(std::string_view text);

/// One line per finding (report/findings.h), errors first, then warnings, then notes as notices: at most
/// kAnnotationsPerType of each type, and then, when any was left out, one notice counting them (which the notices'
/// own share leaves room for). Paths relative to `root` (empty: the current directory).
std::string render_github(const ScanReport& report, const std::filesystem::path& root);

}  // namespace precdetect
