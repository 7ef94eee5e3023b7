#include "precdetect/report/sarif_report.h"

#include <fmt/format.h>

#include <cctype>
#include <string_view>

#include "precdetect/report/findings.h"

namespace precdetect {
namespace {

using nlohmann::ordered_json;

constexpr const char* kSchema =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// A path as a relative URI reference: every byte but the unreserved ones, sub-delimiters, ':', '@' and '/'
/// percent-encoded (a weight file may be named `ckpt #3 (50%).pt`).
std::string uri_reference(const std::string& path) {
  std::string uri;
  for (unsigned char c : path) {
    bool plain =
        std::isalnum(c) || std::string_view("-._~!$&'()*+,;=:@/").find(static_cast<char>(c)) != std::string_view::npos;
    uri += plain ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  }
  return uri;
}

ordered_json text(const std::string& words) { return {{"text", words}}; }

/// GitHub reads `security-severity` (a string) and the `security` tag as a security rule; the others carry
/// `problem.severity` instead.
ordered_json rule_properties(const FindingRule& rule) {
  std::string family = rule.id.substr(0, rule.id.find('/'));
  if (rule.security_severity > 0)
    return {{"tags", ordered_json::array({"security", "external/cwe/cwe-502", family})},
            {"security-severity", fmt::format("{:.1f}", rule.security_severity)}};
  return {{"tags", ordered_json::array({family})},
          {"problem.severity", rule.level == FindingLevel::kNote ? "recommendation" : finding_level_name(rule.level)}};
}

ordered_json rule_json(const FindingRule& rule) {
  return {{"id", rule.id},
          {"shortDescription", text(rule.title)},
          {"fullDescription", text(rule.help)},
          {"help", text(rule.help)},
          {"defaultConfiguration", {{"level", finding_level_name(rule.level)}}},
          {"properties", rule_properties(rule)}};
}

/// GitHub needs a region and shows none for a binary file: line 1, as trivy and scorecard write it.
ordered_json location_json(const Finding& finding) {
  return {{"physicalLocation",
           {{"artifactLocation", {{"uri", uri_reference(finding.path)}}},
            {"region", {{"startLine", 1}, {"startColumn", 1}, {"endLine", 1}, {"endColumn", 1}}}}}};
}

ordered_json result_json(const Finding& finding, const FindingRule& rule, size_t rule_index) {
  return {{"ruleId", rule.id},
          {"ruleIndex", rule_index},
          {"level", finding_level_name(rule.level)},
          {"message", text(finding.message)},
          {"locations", ordered_json::array({location_json(finding)})},
          {"partialFingerprints", {{"primaryLocationLineHash", finding.fingerprint}}}};
}

ordered_json notification_json(const Finding& finding, const FindingRule& rule) {
  return {{"level", "error"},
          {"message", text(finding.message)},
          {"locations", ordered_json::array({location_json(finding)})},
          {"descriptor", {{"id", rule.id}}}};
}

}  // namespace

ordered_json sarif_json(const ScanReport& report, const std::filesystem::path& root) {
  Findings found = collect_findings(report, root);
  // `ruleIndex` points into the rules the results use: notifications' descriptors are listed apart.
  ordered_json rules = ordered_json::array(), descriptors = ordered_json::array();
  std::vector<size_t> index(found.rules.size());
  for (size_t i = 0; i < found.rules.size(); ++i) {
    ordered_json& list = found.rules[i].notification ? descriptors : rules;
    index[i] = list.size();
    list.push_back(rule_json(found.rules[i]));
  }
  ordered_json results = ordered_json::array(), notifications = ordered_json::array();
  for (const Finding& finding : found.findings) {
    const FindingRule& rule = found.rules[finding.rule];
    if (rule.notification)
      notifications.push_back(notification_json(finding, rule));
    else
      results.push_back(result_json(finding, rule, index[finding.rule]));
  }
  ordered_json driver = {{"name", "precdetect"},
                         {"version", PRECDETECT_VERSION},
                         {"semanticVersion", PRECDETECT_VERSION},
                         {"rules", rules}};
  if (!descriptors.empty()) driver["notifications"] = descriptors;
  ordered_json invocation = {{"executionSuccessful", notifications.empty()}};
  if (!notifications.empty()) invocation["toolExecutionNotifications"] = notifications;
  ordered_json run = {
      {"tool", {{"driver", driver}}}, {"invocations", ordered_json::array({invocation})}, {"results", results}};
  return {{"$schema", kSchema}, {"version", "2.1.0"}, {"runs", ordered_json::array({run})}};
}

}  // namespace precdetect
