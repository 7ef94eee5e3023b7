#pragma once
/// Resolves Hugging Face ids ("org/name[@revision]") in the local hub cache. Never touches the network.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace precdetect {

/// The hub cache folder: $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub,
/// else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
std::filesystem::path hf_hub_cache();

/// True when `revision` is a commit id as huggingface_hub writes one (REGEX_COMMIT_HASH): 40 lower-case hex digits.
bool is_commit_hash(std::string_view revision);

/// True when `input` has the shape of a hub id: "name" or "org/name", optionally "@revision".
bool has_hf_id_shape(std::string_view input);

/// The snapshot folder of `id` in `cache` (revision default "main", through refs/ unless it is a 40-hex
/// commit). Throws Error(kHfCacheMiss) saying what was looked for and where.
std::filesystem::path resolve_hf_id(std::string_view id, const std::filesystem::path& cache);

/// "org/name" of the hub cache's models--org--name folder that `path` is or lies in; nullopt elsewhere.
std::optional<std::string> cached_repo_id(const std::filesystem::path& path);

/// Every model repo in `cache` as an id for resolve_hf_id, sorted: "org/name" where refs/main exists, else
/// "org/name@<newest snapshot>"; with `all_revisions` one "org/name@<commit>" per snapshot. Datasets and spaces
/// are left out. An absent cache has no models.
std::vector<std::string> cached_models(const std::filesystem::path& cache, bool all_revisions);

}  // namespace precdetect
