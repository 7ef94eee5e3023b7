#include "precdetect/classify/evidence/documented_precision.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "precdetect/classify/evidence/records.h"

namespace precdetect {
namespace {

using nlohmann::json;

/// config.json names the same size under other keys in some families (BLOOM's n_embed and n_layer, GPT-2's
/// n_embd, T5's d_model and num_layers), as transformers' attribute_map does: an entry writes the first name.
constexpr std::array<std::pair<std::string_view, std::array<std::string_view, 3>>, 3> kConfigAliases = {{
    {"hidden_size", {"n_embed", "n_embd", "d_model"}},
    {"num_hidden_layers", {"n_layer", "num_layers", ""}},
    {"num_attention_heads", {"n_head", "num_heads", ""}},
}};

const json* config_field(const json& config, std::string_view key) {
  if (config.contains(key)) return &config[std::string(key)];
  for (const auto& [name, aliases] : kConfigAliases)
    if (name == key)
      for (std::string_view alias : aliases)
        if (!alias.empty() && config.contains(alias)) return &config[std::string(alias)];
  return nullptr;
}

/// Every field of the entry's `config` has its value in `config`; a list there (architectures) contains it.
bool config_matches(const json& wanted, const json& config) {
  if (wanted.empty() || !config.is_object()) return false;
  for (const auto& [key, value] : wanted.items()) {
    const json* field = config_field(config, key);
    if (field == nullptr) return false;
    bool listed = field->is_array() && std::find(field->begin(), field->end(), value) != field->end();
    if (*field != value && !listed) return false;
  }
  return true;
}

std::string config_text(const json& wanted) {
  std::vector<std::string> fields;
  for (const auto& [key, value] : wanted.items())
    fields.push_back(fmt::format("{}={}", key, value.is_string() ? value.get<std::string>() : value.dump()));
  return fmt::format("{}", fmt::join(fields, ", "));
}

Documented documented(const RegistryEntry& entry, std::string id, MatchKind kind, std::string matched) {
  Grade grade = entry.grade;
  if (kind == MatchKind::kConfig && grade != Grade::kLow) grade = static_cast<Grade>(static_cast<int>(grade) + 1);
  return {.id = std::move(id),
          .precision = entry.precision,
          .label = precision_label(entry.precision),
          .grade = grade,
          .confidence = grade_confidence(grade),
          .matched_by = kind,
          .matched = std::move(matched),
          .source = entry.source,
          .quote = entry.quote};
}

/// The entry's id a variant is named after ("Qwen/Qwen-7B" for "Qwen/Qwen-7B-Chat"): the longest that begins it;
/// none when the authors released no base (Phi-3's instruct models).
const std::string* base_of_variant(const RegistryEntry& entry, std::string_view variant) {
  const std::string* base = nullptr;
  for (const std::string& id : entry.ids)
    if (!id.ends_with('*') && id.size() < variant.size() && same_hub_id(id, variant.substr(0, id.size())) &&
        (base == nullptr || id.size() > base->size()))
      base = &id;
  return base;
}

/// The entry whose id or variant names `id` best; a variant matches as a fine-tune of its base
/// (base_of_variant), or as itself when no base id begins it.
std::optional<Documented> by_id(const Registry& registry, const std::string& id, MatchKind kind) {
  const RegistryEntry* best = nullptr;
  const std::string* best_pattern = nullptr;
  bool best_is_variant = false;
  size_t best_rank = 0;
  for (const RegistryEntry& entry : registry.entries)
    for (bool variant : {false, true})
      for (const std::string& pattern : variant ? entry.variants : entry.ids)
        if (size_t rank = hub_id_match(pattern, id); rank > best_rank)
          best = &entry, best_pattern = &pattern, best_is_variant = variant, best_rank = rank;
  if (best == nullptr) return std::nullopt;
  std::string named = best_pattern->ends_with('*') ? id : *best_pattern;
  const std::string* base = best_is_variant ? base_of_variant(*best, id) : nullptr;
  Documented found = documented(*best, base ? *base : std::move(named), kind, id);
  found.base_model = best_is_variant;
  return found;
}

std::optional<Documented> by_config(const Registry& registry, const json& config) {
  std::vector<const RegistryEntry*> matches;
  for (const RegistryEntry& entry : registry.entries)
    if (config_matches(entry.config, config)) matches.push_back(&entry);
  if (matches.empty()) return std::nullopt;
  for (const RegistryEntry* entry : matches)
    if (precision_label(entry->precision) != precision_label(matches.front()->precision)) return std::nullopt;
  // The entry of the weakest grade speaks for them all: the match cannot say which of them the model is.
  const RegistryEntry& weakest = **std::max_element(matches.begin(), matches.end(),
                                                    [](const auto* a, const auto* b) { return a->grade < b->grade; });
  return documented(weakest, weakest.ids.front(), MatchKind::kConfig, config_text(weakest.config));
}

/// "documented bf16 for EleutherAI/pythia-1b (grade high: the EleutherAI/pythia README ...)", naming a base as
/// such.
std::string documented_text(const Documented& documented) {
  return fmt::format("documented {} for {}{} (grade {}: {})", documented.precision,
                     documented.base_model ? "its base model " : "", documented.id, documented.grade,
                     documented.source);
}

void decide_over_ranges(Verdict& verdict, const Documented& documented, const RuleEvidence* winner) {
  verdict.decided_by = VerdictBasis::kDocumented;
  verdict.label = documented.label;
  verdict.candidates = {documented.label};
  verdict.confidence = documented.confidence;
  if (winner == nullptr) return;
  const std::vector<Label>& ranges = winner->candidates;
  if (std::find(ranges.begin(), ranges.end(), documented.label) != ranges.end()) {
    verdict.confidence = agreeing_confidence(documented.confidence, winner->confidence);
    return;
  }
  verdict.conflicts.push_back(
      {ConflictKind::kRangesNotDocumented,
       fmt::format("{}, but range rule {} says {} ({}): the weights were changed after pretraining (a fine-tune, "
                   "a conversion), or the entry does not describe this checkpoint",
                   documented_text(documented), winner->rule, fmt::join(ranges, "|"), winner->observed_text())});
  verdict.admit(ranges);
  verdict.confidence = kConflictConfidence;
}

void weigh_against_records(Verdict& verdict, const Documented& documented) {
  if (verdict.label == Label::kUnknown) return;  // the records disagree among themselves: shown already
  if (verdict.label == documented.label) {
    verdict.confidence = agreeing_confidence(verdict.confidence, documented.confidence);
    return;
  }
  verdict.conflicts.push_back(
      {ConflictKind::kRecordNotDocumented,
       fmt::format("recorded {} ({}), but {}: the record describes the run that saved this checkpoint, often a "
                   "fine-tune in another precision than pretraining",
                   verdict.label, record_text(verdict.records.front()), documented_text(documented))});
  verdict.admit(std::array{documented.label});
  verdict.confidence = kConflictConfidence;
}

}  // namespace

std::optional<Documented> find_documented(const Registry& registry, const ModelIdentity& identity) {
  if (identity.hub_id)
    if (auto found = by_id(registry, *identity.hub_id, identity.hub_id_source)) {
      found->base_model = found->base_model || identity.hub_id_source == MatchKind::kAdapterBase;
      return found;
    }
  if (identity.name_or_path)
    if (auto found = by_id(registry, *identity.name_or_path, MatchKind::kNameOrPath)) {
      found->base_model =
          found->base_model || (identity.hub_id && !same_hub_id(*identity.hub_id, *identity.name_or_path));
      return found;
    }
  if (identity.legacy_name)  // only a registry id itself: a slash-less name matches no pattern and no variant
    if (auto found = by_id(registry, *identity.legacy_name, MatchKind::kLegacyId);
        found && same_hub_id(found->id, *identity.legacy_name))
      return found;
  return by_config(registry, identity.config);
}

std::optional<Documented> find_base_documented(const Registry& registry, const std::string& base_model) {
  std::optional<std::string> id = adapter_base_id(base_model);
  if (!id) return std::nullopt;
  return find_documented(registry, {.hub_id = id, .hub_id_source = MatchKind::kAdapterBase});
}

double agreeing_confidence(double a, double b) { return std::min(0.99, 1.0 - (1.0 - a) * (1.0 - b)); }

void weigh_documented(Verdict& verdict, const std::optional<Documented>& documented, const RuleEvidence* winner) {
  if (!documented) return;
  verdict.documented = documented;
  if (documented->label == Label::kUnknown) return;
  if (documented->label == Label::kBf16)
    verdict.fp16_risk_reasons.push_back({.kind = Fp16RiskKind::kDocumented, .rule = documented->id});
  if (verdict.decided_by == VerdictBasis::kRecords)
    weigh_against_records(verdict, *documented);
  else
    decide_over_ranges(verdict, *documented, winner);
}

}  // namespace precdetect
