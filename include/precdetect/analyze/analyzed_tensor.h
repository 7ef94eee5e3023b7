#pragma once
/// One tensor of a model as analysis leaves it: what the file said of it, its role and its statistics.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "precdetect/analyze/tensor_groups.h"
#include "precdetect/core/dtype.h"
#include "precdetect/kernel/tensor_stats.h"
#include "precdetect/load/tensor_record.h"

namespace precdetect {

struct AnalyzedTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;  ///< empty for a model-parallel tensor whose parts are slices (see `parts`)
  uint64_t numel = 0;
  uint64_t nbytes = 0;
  std::optional<TensorStats> stats;         ///< nullopt for integer and skipped dtypes (census only)
  std::optional<std::string> torch_name;    ///< TensorRecord::torch_name: PyTorch's name for a Flax path
  TensorGroup group = TensorGroup::kOther;  ///< tensor_group(torch_name, else name)
  std::optional<Layer> layer;               ///< tensor_layer(torch_name, else name)
  TensorRole role = TensorRole::kModel;
  std::optional<std::string> shares_storage_with;  ///< the first tensor on the same storage
  bool counted = true;  ///< false for a second reference to the same view (tied weights): counted once
  /// Model-parallel shards: the shape of each part, one per file; empty for a tensor stored whole.
  std::vector<std::vector<int64_t>> parts;
  /// The parts are copies of one tensor (same shape and statistics: a replicated norm), counted once.
  bool replicated = false;
  /// A quantized weight analyzed with its scales (TensorRecord::scaled_by): the scale tensor and its blocks.
  std::optional<ScaleLink> scaled_by;
};

}  // namespace precdetect
