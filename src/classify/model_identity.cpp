#include "precdetect/classify/model_identity.h"

#include "precdetect/discover/hf_cache.h"
#include "precdetect/net/url.h"

namespace precdetect {
namespace {

/// "org/name" of a hub id as typed: the revision dropped. nullopt for anything that is not one.
std::optional<std::string> repo_of(std::string_view text) {
  if (!has_hf_id_shape(text)) return std::nullopt;
  return std::string(text.substr(0, text.find('@')));
}

/// config.json's `_name_or_path`, trailing slashes dropped; nullopt when there is none.
std::optional<std::string> name_or_path_of(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("_name_or_path") || !config["_name_or_path"].is_string())
    return std::nullopt;
  std::string value = config["_name_or_path"];
  while (value.size() > 1 && value.back() == '/') value.pop_back();
  return value;
}

/// `_name_or_path` names a hub id ("EleutherAI/pythia-1b"), or a hub cache folder when the model was loaded
/// from a local snapshot; any other local path names nothing the registry knows.
std::optional<std::string> named_model(const nlohmann::json& config) {
  std::optional<std::string> value = name_or_path_of(config);
  if (!value || value->find('/') == std::string::npos) return std::nullopt;  // legacy_name's case
  if (std::optional<std::string> id = repo_of(*value)) return id;
  return cached_repo_id(*value);
}

/// A slash-less `_name_or_path` ("t5-small"), unless a folder of that name is in the working directory, where
/// from_pretrained("t5-small") looks before the hub, or in `beside` (the folder the scanned model lies in).
std::optional<std::string> legacy_name_of(const nlohmann::json& config, const std::filesystem::path& beside) {
  std::optional<std::string> value = name_or_path_of(config);
  if (!value || value->empty() || value->find('/') != std::string::npos || *value == "." || *value == "..")
    return std::nullopt;
  std::error_code ec;
  if (std::filesystem::is_directory(*value, ec) ||
      (!beside.empty() && std::filesystem::is_directory(beside / *value, ec)))
    return std::nullopt;
  return value;
}

}  // namespace

std::string_view match_kind_name(MatchKind kind) {
  switch (kind) {
    case MatchKind::kHubId:
      return "hub_id";
    case MatchKind::kCacheFolder:
      return "cache_folder";
    case MatchKind::kNameOrPath:
      return "name_or_path";
    case MatchKind::kConfig:
      return "config";
    case MatchKind::kAdapterBase:
      return "adapter_base";
    case MatchKind::kLegacyId:
      return "legacy_id";
  }
  return "hub_id";
}

ModelIdentity identify_model(const std::string& input, const std::filesystem::path& path, nlohmann::json config) {
  ModelIdentity identity{.config = std::move(config)};
  // A hub id is known where the weights lie in the cache, or where they are read from the Hub (`hf://org/name`);
  // it was typed when the input resolved to it there (an input of id shape that names no path, such as a
  // `folder/group` shard group, is no hub id).
  if (std::optional<HubRef> hub = parse_hub_url(input)) {
    identity.hub_id = hub->repo;
    identity.hub_id_source = MatchKind::kHubId;
  } else if (std::optional<std::string> cached = cached_repo_id(path)) {
    std::error_code ec;
    bool typed = !std::filesystem::exists(input, ec) && repo_of(input) == cached;
    identity.hub_id = cached;
    identity.hub_id_source = typed ? MatchKind::kHubId : MatchKind::kCacheFolder;
  }
  identity.name_or_path = named_model(identity.config);
  std::error_code ec;
  std::filesystem::path model_folder = std::filesystem::is_directory(path, ec) ? path : path.parent_path();
  identity.legacy_name = legacy_name_of(identity.config, model_folder.parent_path());
  return identity;
}

std::optional<std::string> adapter_base_id(const std::string& base_model) {
  if (std::optional<std::string> id = repo_of(base_model)) return id;
  return cached_repo_id(base_model);
}

ModelIdentity identify_live_model(nlohmann::json config) {
  if (!config.is_object()) config = nullptr;
  ModelIdentity identity{
      .name_or_path = named_model(config), .legacy_name = legacy_name_of(config, {}), .config = std::move(config)};
  return identity;
}

bool same_hub_id(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](char x, char y) { return std::tolower(static_cast<unsigned char>(x)) == std::tolower(y); });
}

size_t hub_id_match(std::string_view pattern, std::string_view id) {
  if (!pattern.ends_with('*')) return same_hub_id(pattern, id) ? SIZE_MAX : 0;
  std::string_view prefix = pattern.substr(0, pattern.size() - 1);
  return id.size() >= prefix.size() && same_hub_id(prefix, id.substr(0, prefix.size())) ? prefix.size() + 1 : 0;
}

}  // namespace precdetect
