#pragma once
/// Two checkpoints compared tensor by tensor, with per-layer, per-group and overall (parameter-weighted) totals.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "precdetect/analyze/tensor_filter.h"
#include "precdetect/analyze/tensor_groups.h"
#include "precdetect/core/error.h"
#include "precdetect/diff/tensor_diff.h"
#include "precdetect/load/checkpoint.h"

namespace precdetect {

struct TensorDiff {
  std::string name;
  TensorGroup group = TensorGroup::kOther;  ///< tensor_group(name), as scan groups it
  DType base_dtype, other_dtype;
  std::vector<int64_t> shape;
  bool numeric = true;  ///< false for integer tensors: compared bitwise only, kept out of the totals
  DiffStats stats;
};

struct Mismatch {
  std::string name, base, other;  ///< what differs, e.g. shapes "[2, 3]" vs "[3, 2]"
};

struct PairDiff {
  std::string base, other;
  std::optional<ModelError> error;
  DiffStats overall;
  std::map<TensorGroup, DiffStats> groups;  ///< by tensor_group(), as scan groups tensors
  std::map<Layer, DiffStats> layers;        ///< by tensor_layer(), as scan finds blocks
  std::vector<TensorDiff> tensors;
  std::vector<std::string> missing, extra;  ///< in base only / in other only
  std::vector<Mismatch> shape_mismatch, dtype_mismatch;
  /// True when anything differs: a value, a dtype, a shape, or a tensor present on one side only.
  bool changed() const;
};

/// Compares the model tensors of `other` against `base` (selected by `filter`), one pair of tensors at a time.
PairDiff diff_checkpoints(const Checkpoint& base, const Checkpoint& other, const TensorFilter& filter,
                          const DiffOptions& options, const ComputeDevice& device);

}  // namespace precdetect
