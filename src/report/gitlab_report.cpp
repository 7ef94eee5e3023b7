#include "precdetect/report/gitlab_report.h"

#include "precdetect/report/findings.h"

namespace precdetect {
namespace {

std::string_view severity(const FindingRule& rule) {
  switch (rule.level) {
    case FindingLevel::kError:
      return rule.security_severity > 0 ? "critical" : "major";
    case FindingLevel::kWarning:
      return "minor";
    case FindingLevel::kNote:
      return "info";
  }
  return "major";
}

}  // namespace

nlohmann::ordered_json gitlab_json(const ScanReport& report, const std::filesystem::path& root) {
  Findings found = collect_findings(report, root);
  nlohmann::ordered_json issues = nlohmann::ordered_json::array();
  for (const Finding& finding : found.findings) {
    const FindingRule& rule = found.rules[finding.rule];
    // GitLab asks for a line, which a binary file does not have: line 1, as for GitHub.
    issues.push_back({{"description", finding.message},
                      {"check_name", rule.id},
                      {"fingerprint", finding.fingerprint},
                      {"severity", severity(rule)},
                      {"location", {{"path", finding.path}, {"lines", {{"begin", 1}}}}}});
  }
  return issues;
}

}  // namespace precdetect
