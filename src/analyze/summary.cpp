#include "precdetect/analyze/summary.h"

#include <algorithm>

namespace precdetect {

void ValueSummary::add(const TensorRecord& record, const TensorStats* stats) {
  ++tensors;
  parameters += record.numel;
  bytes += record.nbytes;
  DTypeCensus& dtype = census[std::string(dtype_name(record.dtype))];
  ++dtype.tensors;
  dtype.parameters += record.numel;
  dtype.bytes += record.nbytes;
  if (!stats) return;
  ++analyzed_tensors;
  totals.merge(*stats);
  if (stats->has_values()) {
    abs_min = has_values ? std::min(abs_min, stats->abs_min) : stats->abs_min;
    abs_max = has_values ? std::max(abs_max, stats->abs_max) : stats->abs_max;
    has_values = true;
  }
  double norm = stats->norm();
  if (norm > 0) {  // seed 000: `if p_norm > 0` keeps all-zero tensors out of norm min
    norm_min = has_nonzero_norm ? std::min(norm_min, norm) : norm;
    norm_max = has_nonzero_norm ? std::max(norm_max, norm) : norm;
    has_nonzero_norm = true;
  }
}

void ModelSummary::add(const TensorRecord& record, const TensorStats* stats, std::string_view group,
                       const std::optional<Layer>& layer) {
  ValueSummary::add(record, stats);
  groups[std::string(group)].add(record, stats);
  if (layer) layers[*layer].add(record, stats);
}

}  // namespace precdetect
