#pragma once
/// Summaries of sets of tensors (the model, each group, each layer), defined exactly as seed 000's analyze():
/// abs min over every value (zeros included), abs max, and norm min/max over the per-tensor L2 norms, norm min
/// skipping all-zero tensors; with the dtype census and every tensor's counts merged.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "precdetect/analyze/analyzed_tensor.h"

namespace precdetect {

/// Tensors, parameters and stored bytes of one dtype.
struct DTypeCensus {
  uint64_t tensors = 0, parameters = 0, bytes = 0;
};

struct ValueSummary {
  double abs_min = 0.0, abs_max = 0.0, norm_min = 0.0, norm_max = 0.0;
  bool has_values = false;                    ///< false until a floating tensor with a non-NaN value is added
  bool has_nonzero_norm = false;              ///< false until a tensor with a non-zero norm is added
  uint64_t tensors = 0;                       ///< every selected tensor, any dtype
  uint64_t parameters = 0;                    ///< elements of every selected tensor
  uint64_t bytes = 0;                         ///< stored bytes of every selected tensor
  uint64_t analyzed_tensors = 0;              ///< floating tensors whose values were analyzed
  std::map<std::string, DTypeCensus> census;  ///< by stored dtype name
  TensorStats totals;           ///< every analyzed tensor's statistics merged (counts, exponents, NaN, Inf)
  std::string abs_max_tensor;   ///< the tensor holding abs_max (the first, on ties)
  std::string norm_max_tensor;  ///< the tensor whose norm is norm_max

  /// Counts a tensor, and folds in its statistics when it was analyzed.
  void add(const AnalyzedTensor& tensor);
};

struct ModelSummary : ValueSummary {
  std::map<TensorGroup, ValueSummary> groups;  ///< by tensor_group()
  std::map<Layer, ValueSummary> layers;        ///< by tensor_layer(), for the tensors that name one

  /// Adds the tensor to the model, its group and its layer (if any).
  void add(const AnalyzedTensor& tensor);
};

}  // namespace precdetect
