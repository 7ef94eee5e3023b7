#include "precdetect/classify/rules.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "precdetect/core/error.h"
#include "precdetect/net/text_file.h"

namespace precdetect {
namespace {

using nlohmann::json;

Condition parse_condition(const json& item, const std::string& rule_id, const std::filesystem::path& origin) {
  auto stat_key = item.at("stat").get<std::string>(), op_text = item.at("op").get<std::string>();
  std::optional<Stat> stat = parse_stat(stat_key);
  std::optional<Op> op = parse_op(op_text);
  if (!stat) fail(ErrorCode::kInvalidRules, origin, fmt::format("rule `{}`: unknown stat `{}`", rule_id, stat_key));
  if (!op) fail(ErrorCode::kInvalidRules, origin, fmt::format("rule `{}`: unknown op `{}`", rule_id, op_text));
  return {*stat, *op, item.at("value").get<double>()};
}

Label parse_rule_label(const std::string& name, const std::string& rule_id, const std::filesystem::path& origin) {
  std::optional<Label> label = parse_label(name);
  if (!label || !(is_precision(*label) || *label == Label::kUnknown))
    fail(ErrorCode::kInvalidRules, origin,
         fmt::format("rule `{}`: label `{}` must be fp16, bf16, fp32 or unknown", rule_id, name));
  return *label;
}

std::vector<Label> parse_candidates(const json& item, const Rule& rule, const std::filesystem::path& origin) {
  std::vector<Label> candidates;
  for (const std::string& name : item.value("candidates", std::vector<std::string>{}))
    candidates.push_back(parse_rule_label(name, rule.id, origin));
  if (!item.contains("candidates")) candidates = {rule.label};
  if (candidates.empty() || candidates.front() != rule.label)
    fail(ErrorCode::kInvalidRules, origin, fmt::format("rule `{}`: candidates must start with its label", rule.id));
  return candidates;
}

Rule parse_rule(const json& item, const std::filesystem::path& origin) {
  Rule rule{.id = item.at("id").get<std::string>()};
  for (const json& condition : item.at("when")) rule.when.push_back(parse_condition(condition, rule.id, origin));
  rule.label = parse_rule_label(item.at("label").get<std::string>(), rule.id, origin);
  rule.confidence = item.at("confidence").get<double>();
  rule.fp16_risk = item.at("fp16_risk").get<bool>();
  rule.says = item.value("says", "");
  rule.source = item.value("source", "");
  rule.basis = item.value("basis", "");
  if (rule.when.empty()) fail(ErrorCode::kInvalidRules, origin, fmt::format("rule `{}` has no conditions", rule.id));
  rule.candidates = parse_candidates(item, rule, origin);
  if (!(rule.confidence >= 0.0 && rule.confidence <= 1.0))
    fail(ErrorCode::kInvalidRules, origin, fmt::format("rule `{}`: confidence must lie in [0, 1]", rule.id));
  return rule;
}

BufferPattern parse_buffer(const json& item, const std::filesystem::path& origin) {
  BufferPattern buffer{.pattern = item.at("pattern").get<std::string>(), .why = item.value("why", "")};
  try {
    buffer.regex = std::regex(buffer.pattern);
  } catch (const std::regex_error& e) {
    fail(ErrorCode::kInvalidRules, origin, fmt::format("buffer pattern `{}`: {}", buffer.pattern, e.what()));
  }
  return buffer;
}

BufferNames parse_buffers(const json& document, const std::filesystem::path& origin) {
  BufferNames buffers;
  for (const json& item : document.at("buffers")) buffers.patterns.push_back(parse_buffer(item, origin));
  return buffers;
}

}  // namespace

const std::string& default_rules_json() {
  static const std::string text =
#include "default_rules.inc"
      ;
  return text;
}

const RuleSet& default_rules() {
  static const RuleSet rules = parse_rules(default_rules_json(), "<built-in rules>");
  return rules;
}

RuleSet parse_rules(const std::string& text, const std::filesystem::path& origin) {
  try {
    json document = json::parse(text);
    RuleSet set{.name = document.value("name", origin.filename().string())};
    for (const json& item : document.at("rules")) set.rules.push_back(parse_rule(item, origin));
    if (set.rules.empty()) fail(ErrorCode::kInvalidRules, origin, "the rules file holds no rules");
    // A rules file written before buffers were listed keeps the built-in list rather than silently none.
    set.buffers = document.contains("buffers") ? parse_buffers(document, origin) : default_rules().buffers;
    return set;
  } catch (const json::exception& e) {
    fail(ErrorCode::kInvalidRules, origin, fmt::format("invalid rules file: {}", e.what()));
  }
}

RuleSet load_rules(const std::filesystem::path& path) { return parse_rules(read_text_file(path, "rules file"), path); }

}  // namespace precdetect
