#pragma once
/// Resolves Hugging Face ids ("org/name[@revision]") in the local hub cache. Never touches the network.

#include <filesystem>
#include <optional>
#include <string_view>

namespace precdetect {

/// The hub cache folder: $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub,
/// else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
std::filesystem::path hf_hub_cache();

/// True when `input` has the shape of a hub id: "name" or "org/name", optionally "@revision".
bool looks_like_hf_id(std::string_view input);

/// The snapshot folder of `id` in `cache` (revision default "main", through refs/ unless it is a 40-hex
/// commit). Throws Error(kHfCacheMiss) saying what was looked for and where.
std::filesystem::path resolve_hf_id(std::string_view id, const std::filesystem::path& cache);

}  // namespace precdetect
