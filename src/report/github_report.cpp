#include "precdetect/report/github_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <vector>

#include "precdetect/report/findings.h"

namespace precdetect {
namespace {

std::string escaped(std::string_view text, bool property) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '%':
        out += "%25";
        break;
      case '\r':
        out += "%0D";
        break;
      case '\n':
        out += "%0A";
        break;
      case ':':
        out += property ? "%3A" : ":";
        break;
      case ',':
        out += property ? "%2C" : ",";
        break;
      default:
        out += c;
    }
  }
  return out;
}

/// The workflow command's name for a level: SARIF's note is GitHub's notice.
std::string_view command(FindingLevel level) {
  return level == FindingLevel::kNote ? "notice" : finding_level_name(level);
}

std::string annotation(const Finding& finding, const FindingRule& rule) {
  return fmt::format("::{} file={},line=1,title={}::{}\n", command(rule.level),
                     escape_annotation_property(finding.path),
                     escape_annotation_property(fmt::format("{} [precdetect {}]", rule.title, rule.id)),
                     escape_annotation_data(finding.message));
}

constexpr std::array kLevels = {FindingLevel::kError, FindingLevel::kWarning, FindingLevel::kNote};

}  // namespace

std::string escape_annotation_data(std::string_view text) { return escaped(text, false); }

std::string escape_annotation_property(std::string_view text) { return escaped(text, true); }

std::string render_github(const ScanReport& report, const std::filesystem::path& root) {
  Findings found = collect_findings(report, root);
  std::array<std::vector<const Finding*>, kLevels.size()> by_level;  // in kLevels' order: errors first
  bool left_out = false;
  for (size_t level = 0; level < kLevels.size(); ++level) {
    for (const Finding& finding : found.findings)
      if (found.rules[finding.rule].level == kLevels[level]) by_level[level].push_back(&finding);
    left_out = left_out || by_level[level].size() > kAnnotationsPerType;
  }
  std::string out;
  std::vector<std::string> counts;
  for (size_t level = 0; level < kLevels.size(); ++level) {
    // The count's notice is a notice too: the notes leave it its place among GitHub's ten.
    size_t shown = kAnnotationsPerType - (kLevels[level] == FindingLevel::kNote && left_out ? 1 : 0);
    const std::vector<const Finding*>& findings = by_level[level];
    for (size_t i = 0; i < findings.size() && i < shown; ++i)
      out += annotation(*findings[i], found.rules[findings[i]->rule]);
    if (findings.size() > shown)
      counts.push_back(fmt::format("{} {}s", findings.size() - shown, command(kLevels[level])));
  }
  if (!counts.empty())
    out += fmt::format(
        "::notice title={}::{}\n", escape_annotation_property("precdetect: annotations left out"),
        escape_annotation_data(fmt::format("{} more not shown: GitHub shows {} annotations of each type per step. "
                                           "--format sarif or json lists every finding.",
                                           fmt::join(counts, ", "), kAnnotationsPerType)));
  return out;
}

}  // namespace precdetect
