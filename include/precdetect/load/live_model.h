#pragma once
/// A model already in memory (precdetect.check), as the pipeline sees it: records, and each one's statistics
/// computed where its tensor lives. load/live_tensors.h makes one from libtorch tensors.

#include <functional>
#include <vector>

#include "precdetect/core/warning.h"
#include "precdetect/kernel/tensor_stats.h"
#include "precdetect/load/tensor_record.h"

namespace precdetect {

struct LiveModel {
  std::vector<TensorRecord> records;  ///< the tensors that can be read where they are, in the order given
  /// The statistics of records[i]'s tensor (a floating one), which the function holds: it cannot be freed while
  /// it is read. Throws Error(kDevice) naming the tensor.
  std::function<TensorStats(size_t i)> stats;
  std::vector<Warning> warnings;  ///< the tensors skipped, each with why (kLiveTensorsSkipped)
};

}  // namespace precdetect
