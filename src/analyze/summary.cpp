#include "precdetect/analyze/summary.h"

#include <algorithm>

namespace precdetect {

void ModelSummary::add_stored(const TensorRecord& record) {
  ++tensors;
  parameters += record.numel;
  bytes += record.nbytes;
  ++dtypes[std::string(dtype_name(record.dtype))];
}

void ModelSummary::add_stats(const TensorStats& stats) {
  ++analyzed_tensors;
  nans += stats.nans;
  infs += stats.infs;
  if (stats.has_values()) {
    abs_min = has_values ? std::min(abs_min, stats.abs_min) : stats.abs_min;
    abs_max = has_values ? std::max(abs_max, stats.abs_max) : stats.abs_max;
    has_values = true;
  }
  double norm = stats.norm();
  if (norm > 0) {  // seed 000: `if p_norm > 0` keeps all-zero tensors out of norm min
    norm_min = has_nonzero_norm ? std::min(norm_min, norm) : norm;
    norm_max = has_nonzero_norm ? std::max(norm_max, norm) : norm;
    has_nonzero_norm = true;
  }
}

}  // namespace precdetect
