#pragma once
/// Two checkpoints compared tensor by tensor, with per-layer, per-group and overall (parameter-weighted) totals.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "precdetect/analyze/tensor_filter.h"
#include "precdetect/analyze/tensor_groups.h"
#include "precdetect/core/error.h"
#include "precdetect/core/named_enum.h"
#include "precdetect/diff/tensor_diff.h"
#include "precdetect/load/checkpoint.h"

namespace precdetect {

/// What a pair of checkpoints adds up to, from most to least alike.
enum class DiffOutcome {
  kIdentical,  ///< the same tensors, each bitwise equal in the same dtype
  kLossless,   ///< the same tensors, every value kept, some in another dtype (llama.cpp keeps norms and biases in F32)
  kChanged,    ///< a value moved, or a tensor is missing, extra or reshaped
};

/// The outcome's name in reports: "identical", "lossless", "changed".
std::string_view outcome_name(DiffOutcome outcome);

struct TensorDiff {
  std::string name;
  TensorGroup group = TensorGroup::kOther;  ///< tensor_group(name), as scan groups it
  DType base_dtype, other_dtype;
  std::vector<int64_t> shape;
  bool numeric = true;  ///< false for integer tensors: compared bitwise only, kept out of the totals
  DiffStats stats;
  /// kIdentical: bitwise equal; kLossless: floats equal as numbers in another dtype (NaN and Inf never count).
  DiffOutcome outcome() const;
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
  /// On one side only, computed by a converter from the config (TensorRecord::computed_from_config): no weight
  /// was lost or added, so they keep a conversion lossless.
  std::vector<std::string> computed_from_config;
  std::vector<Mismatch> shape_mismatch, dtype_mismatch;
  /// Stored sparse on either side (TensorRecord::sparse_of: an ONNX sparse initializer): their values are not
  /// compared, so the pair is never called identical or lossless.
  std::vector<std::string> not_compared;
  /// True when anything differs or was not compared: a value, a dtype, a shape, a tensor present on one side only,
  /// a sparse tensor.
  bool changed() const;
  DiffOutcome outcome() const;
};

/// Compares the model tensors of `other` against `base` (selected by `filter`), one pair of tensors at a time.
PairDiff diff_checkpoints(const Checkpoint& base, const Checkpoint& other, const TensorFilter& filter,
                          const DiffOptions& options, const ComputeDevice& device);

}  // namespace precdetect

template <>
struct fmt::formatter<precdetect::DiffOutcome>
    : precdetect::NamedEnumFormatter<precdetect::DiffOutcome, precdetect::outcome_name> {};
