#pragma once
/// What names a model, for the registry of documented precisions: the hub id the user typed or the cache folder
/// the weights lie in, the model config.json says it was loaded from, and config.json's fields.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "precdetect/core/named_enum.h"

namespace precdetect {

/// What names a model for the registry, strongest first: each is shown in the evidence.
enum class MatchKind {
  kHubId,        ///< the hub id the user typed (`precdetect EleutherAI/pythia-1b`)
  kCacheFolder,  ///< the hub cache's models--org--name folder the weights lie in
  kNameOrPath,   ///< config.json's `_name_or_path`: the model itself, or the base a fine-tune was loaded from
  kConfig,       ///< config.json's family and size fields only: a weaker match, one grade lower
  kAdapterBase,  ///< the base model an adapter names (adapter_config.json's base_model_name_or_path)
  /// config.json's `_name_or_path` without a slash (`t5-small`: the hub's ids from before organisations), when it
  /// is exactly a registry id and no folder of that name is where from_pretrained would have found one
  kLegacyId,
};

/// "hub_id", "cache_folder", "name_or_path", "config", "adapter_base", "legacy_id" (JSON
/// `verdict.documented.matched_by`).
std::string_view match_kind_name(MatchKind kind);

struct ModelIdentity {
  std::optional<std::string> hub_id;            ///< "org/name", no revision
  MatchKind hub_id_source = MatchKind::kHubId;  ///< kHubId or kCacheFolder
  std::optional<std::string> name_or_path;      ///< config.json's `_name_or_path`, when it names a hub id
  /// config.json's `_name_or_path` when it has no slash (`t5-small`) and no folder of that name is in the working
  /// directory (where from_pretrained looks first) or beside the model: a hub id from before organisations, or a
  /// local folder this machine does not have. The registry matches it only exactly (MatchKind::kLegacyId).
  std::optional<std::string> legacy_name;
  nlohmann::json config;  ///< config.json's object; null when absent or unreadable
};

/// What names the model `input` resolved to at `path` (a model folder or file), with `config`, its config.json's
/// object as its reading found it (LinkedCheckpoint::config; null without one). Reads no file.
ModelIdentity identify_model(const std::string& input, const std::filesystem::path& path, nlohmann::json config);

/// What names the base model an adapter names: a hub id ("gpt2", "org/name@rev"), or a path of the hub cache;
/// nullopt for anything else (a local folder outside the cache names nothing the registry knows).
std::optional<std::string> adapter_base_id(const std::string& base_model);

/// What names a model in memory: its config's object (an HF model's config.to_dict() with `_name_or_path`); null
/// or any other value names nothing.
ModelIdentity identify_live_model(nlohmann::json config);

/// Whether two hub ids are the same: hub ids compare case-insensitively.
bool same_hub_id(std::string_view a, std::string_view b);

/// How well `pattern` names the hub id `id` (a trailing `*` matches every id that starts with what precedes it):
/// exact ids rank above every prefix, longer prefixes above shorter; 0 for none.
size_t hub_id_match(std::string_view pattern, std::string_view id);

}  // namespace precdetect

template <>
struct fmt::formatter<precdetect::MatchKind>
    : precdetect::NamedEnumFormatter<precdetect::MatchKind, precdetect::match_kind_name> {};
