#include "precdetect/analyze/summary.h"

#include <algorithm>

namespace precdetect {

void ValueSummary::add(const AnalyzedTensor& tensor) {
  ++tensors;
  parameters += tensor.numel;
  bytes += tensor.nbytes;
  DTypeCensus& dtype = census[std::string(dtype_name(tensor.dtype))];
  ++dtype.tensors;
  dtype.parameters += tensor.numel;
  dtype.bytes += tensor.nbytes;
  if (!tensor.stats) return;
  const TensorStats& stats = *tensor.stats;
  ++analyzed_tensors;
  totals.merge(stats);
  if (stats.has_values()) {
    abs_min = has_values ? std::min(abs_min, stats.abs_min) : stats.abs_min;
    if (!has_values || stats.abs_max > abs_max) abs_max = stats.abs_max, abs_max_tensor = tensor.name;
    has_values = true;
  }
  double norm = stats.norm();
  if (norm > 0) {  // seed 000: `if p_norm > 0` keeps all-zero tensors out of norm min
    norm_min = has_nonzero_norm ? std::min(norm_min, norm) : norm;
    if (!has_nonzero_norm || norm > norm_max) norm_max = norm, norm_max_tensor = tensor.name;
    has_nonzero_norm = true;
  }
}

void ModelSummary::add(const AnalyzedTensor& tensor) {
  ValueSummary::add(tensor);
  groups[tensor.group].add(tensor);
  if (tensor.layer) layers[*tensor.layer].add(tensor);
}

}  // namespace precdetect
