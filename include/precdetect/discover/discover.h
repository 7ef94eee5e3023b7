#pragma once
/// Stage 1: turn what the user typed (folder, file, shard index, hub id) into a list of weight files.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace precdetect {

struct ModelSource {
  std::string input;                              ///< as the user typed it
  std::filesystem::path path;                     ///< the resolved model folder or file
  std::vector<std::filesystem::path> files;       ///< weight files, in scan order
  std::map<std::string, std::string> weight_map;  ///< from a shard index: tensor -> shard name; else empty
  std::optional<std::filesystem::path> config;    ///< config.json beside the weights, when present
};

/// Resolves `input`. Throws Error: kNotFound (no such path, not a hub id), kHfCacheMiss, kInvalidIndex,
/// kMissingShard (an indexed shard is absent), kNoWeights.
ModelSource discover(const std::string& input, const std::filesystem::path& hf_cache);

/// True when `folder` holds a model of its own: a shard index or weight files (discover() would find weights).
/// Also true when it cannot be read: it may hold one, and scanning it reports the io_error, so a batch never
/// passes over weights it could not read.
bool may_hold_model(const std::filesystem::path& folder);

}  // namespace precdetect
