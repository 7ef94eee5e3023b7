#include "precdetect/discover/shard_pattern.h"

#include <array>
#include <regex>

namespace precdetect {
namespace {

struct Pattern {
  std::regex regex;  ///< group 1: the part before the shard number; group 2: the number; group 3: the rest
  ShardKind kind;
};

const std::array<Pattern, 4>& patterns() {
  static const std::array<Pattern, 4> kPatterns = {{
      {std::regex(R"(^(.+-)(\d+)(-of-\d+\..+)$)"), ShardKind::kOrdinary},
      {std::regex(R"(^(consolidated\.)(\d+)(\.pth)$)"), ShardKind::kModelParallel},
      {std::regex(R"(^(mp_rank_)(\d+)(_model_states\.pt)$)"), ShardKind::kModelParallel},
      {std::regex(R"(^(.+-model_part-)(\d+)(\.pt)$)"), ShardKind::kModelParallel},
  }};
  return kPatterns;
}

}  // namespace

std::optional<ShardName> shard_name(std::string_view filename) {
  std::string name(filename);
  std::smatch match;
  // DCP's HuggingFaceStorageWriter(save_distributed=True): every rank's files, whatever their file index, are one
  // model (load/dcp/dcp_safetensors.h joins their chunks).
  static const std::regex kDcpRanks(R"(^shard-\d+-model-\d+-of-(\d+)\.safetensors$)");
  if (std::regex_match(name, match, kDcpRanks))
    return ShardName{"shard-*-model-*-of-" + match[1].str() + ".safetensors", ShardKind::kOrdinary};
  for (const Pattern& pattern : patterns())
    if (std::regex_match(name, match, pattern.regex))
      return ShardName{match[1].str() + "*" + match[3].str(), pattern.kind};
  return std::nullopt;
}

bool is_tensor_parallel_rank_folder(std::string_view name) {
  static const std::regex kRank(R"(^mp_rank_\d+$)");
  return std::regex_match(std::string(name), kRank);
}

}  // namespace precdetect
