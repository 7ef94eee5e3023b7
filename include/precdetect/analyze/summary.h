#pragma once
/// The model-level summary, defined exactly as seed 000's analyze(): abs min over every value (zeros
/// included), abs max, and norm min/max over the per-tensor L2 norms, norm min skipping all-zero tensors.

#include <cstdint>
#include <map>
#include <string>

#include "precdetect/analyze/tensor_stats.h"
#include "precdetect/load/tensor_record.h"

namespace precdetect {

struct ModelSummary {
  double abs_min = 0.0, abs_max = 0.0, norm_min = 0.0, norm_max = 0.0;
  bool has_values = false;        ///< false until a floating tensor with a non-NaN value is added
  bool has_nonzero_norm = false;  ///< false until a tensor with a non-zero norm is added
  uint64_t tensors = 0;           ///< every selected tensor, any dtype
  uint64_t parameters = 0;        ///< elements of every selected tensor
  uint64_t bytes = 0;             ///< stored bytes of every selected tensor
  uint64_t analyzed_tensors = 0;  ///< floating tensors whose values were analyzed
  uint64_t nans = 0, infs = 0;
  std::map<std::string, uint64_t> dtypes;  ///< stored dtype -> tensor count

  /// Counts a selected tensor in the census (tensors, parameters, bytes, dtypes).
  void add_stored(const TensorRecord& record);
  /// Folds one analyzed tensor's statistics into the model's.
  void add_stats(const TensorStats& stats);
};

}  // namespace precdetect
