#include "precdetect/classify/rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <regex>
#include <nlohmann/json.hpp>

#include "precdetect/core/error.h"
#include "precdetect/core/text_file.h"

namespace precdetect {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 12> kStats = {
    "abs_min",         "abs_max",    "norm_min",         "norm_max",          "nans",
    "infs",            "parameters", "above_1e2",        "fp16_overflow",     "square_overflow",
    "bf16_exact_fraction", "fp16_exact_fraction"};
constexpr std::array<std::string_view, 4> kOps = {">", ">=", "<", "<="};
constexpr std::array<std::string_view, 4> kLabels = {"fp16", "bf16", "fp32", "unknown"};

template <size_t N>
bool one_of(const std::array<std::string_view, N>& allowed, const std::string& value) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

Condition parse_condition(const json& item, const std::string& rule_id, const std::filesystem::path& origin) {
  Condition condition{item.at("stat").get<std::string>(), item.at("op").get<std::string>(),
                      item.at("value").get<double>()};
  if (!one_of(kStats, condition.stat))
    fail(ErrorCode::kInvalidRules, origin, fmt::format("rule `{}`: unknown stat `{}`", rule_id, condition.stat));
  if (!one_of(kOps, condition.op))
    fail(ErrorCode::kInvalidRules, origin, fmt::format("rule `{}`: unknown op `{}`", rule_id, condition.op));
  return condition;
}

std::vector<std::string> parse_candidates(const json& item, const Rule& rule, const std::filesystem::path& origin) {
  std::vector<std::string> candidates = item.value("candidates", std::vector<std::string>{rule.label});
  for (const std::string& candidate : candidates)
    if (!one_of(kLabels, candidate))
      fail(ErrorCode::kInvalidRules, origin,
           fmt::format("rule `{}`: candidate `{}` must be fp16, bf16, fp32 or unknown", rule.id, candidate));
  if (candidates.empty() || candidates.front() != rule.label)
    fail(ErrorCode::kInvalidRules, origin, fmt::format("rule `{}`: candidates must start with its label", rule.id));
  return candidates;
}

Rule parse_rule(const json& item, const std::filesystem::path& origin) {
  Rule rule{.id = item.at("id").get<std::string>()};
  for (const json& condition : item.at("when")) rule.when.push_back(parse_condition(condition, rule.id, origin));
  rule.label = item.at("label").get<std::string>();
  rule.confidence = item.at("confidence").get<double>();
  rule.fp16_risk = item.at("fp16_risk").get<bool>();
  rule.says = item.value("says", "");
  rule.source = item.value("source", "");
  if (rule.when.empty()) fail(ErrorCode::kInvalidRules, origin, fmt::format("rule `{}` has no conditions", rule.id));
  if (!one_of(kLabels, rule.label))
    fail(ErrorCode::kInvalidRules, origin,
         fmt::format("rule `{}`: label must be fp16, bf16, fp32 or unknown", rule.id));
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
