#include "precdetect/classify/documented.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

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

bool same_id(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](char x, char y) { return std::tolower(static_cast<unsigned char>(x)) == std::tolower(y); });
}

/// How well `pattern` names `id`: exact ids rank above every prefix, longer prefixes above shorter; 0 for none.
size_t id_match(std::string_view pattern, std::string_view id) {
  if (!pattern.ends_with('*')) return same_id(pattern, id) ? SIZE_MAX : 0;
  std::string_view prefix = pattern.substr(0, pattern.size() - 1);
  return id.size() >= prefix.size() && same_id(prefix, id.substr(0, prefix.size())) ? prefix.size() + 1 : 0;
}

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
    if (!id.ends_with('*') && id.size() < variant.size() && same_id(id, variant.substr(0, id.size())) &&
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
        if (size_t rank = id_match(pattern, id); rank > best_rank)
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

}  // namespace

std::optional<Documented> find_documented(const Registry& registry, const ModelIdentity& identity) {
  if (identity.hub_id)
    if (auto found = by_id(registry, *identity.hub_id, identity.hub_id_source)) {
      found->base_model = found->base_model || identity.hub_id_source == MatchKind::kAdapterBase;
      return found;
    }
  if (identity.name_or_path)
    if (auto found = by_id(registry, *identity.name_or_path, MatchKind::kNameOrPath)) {
      found->base_model = found->base_model || (identity.hub_id && !same_id(*identity.hub_id, *identity.name_or_path));
      return found;
    }
  if (identity.legacy_name)  // only a registry id itself: a slash-less name matches no pattern and no variant
    if (auto found = by_id(registry, *identity.legacy_name, MatchKind::kLegacyId);
        found && same_id(found->id, *identity.legacy_name))
      return found;
  return by_config(registry, identity.config);
}

}  // namespace precdetect
