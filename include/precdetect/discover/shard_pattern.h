#pragma once
/// File names that say a weight file is one part of a model (docs/using.md, "One file, one model"): files of a
/// folder are one model only when an index names them or their names share one of these patterns.

#include <optional>
#include <string>
#include <string_view>

namespace precdetect {

/// Ordinary shards hold different tensors; model-parallel shards hold a slice (or a copy) of every tensor under
/// the same names.
enum class ShardKind { kOrdinary, kModelParallel };

struct ShardName {
  std::string group;  ///< the name with the shard number replaced by '*': "model-*-of-00003.safetensors"
  ShardKind kind = ShardKind::kOrdinary;
};

/// The shard group a file name belongs to; nullopt for a file that is a whole checkpoint.
/// `prefix-00001-of-00003.ext` (transformers, ordinary), `consolidated.00.pth` (Meta), `mp_rank_00_model_states.pt`
/// (DeepSpeed) and `prefix-model_part-0.pt` (fairseq, metaseq) are model-parallel.
std::optional<ShardName> shard_name(std::string_view filename);

/// True for a Megatron-LM tensor-parallel rank folder: `mp_rank_00`, `mp_rank_01`, ... (pipeline stages,
/// `mp_rank_00_001`, hold different layers under the same local names, so they are not matched).
bool is_tensor_parallel_rank_folder(std::string_view name);

}  // namespace precdetect
