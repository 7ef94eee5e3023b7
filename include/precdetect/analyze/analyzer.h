#pragma once
/// Stage 3: the statistics of one stored tensor, on the CPU (our kernel) or a CUDA device (libtorch ops).

#include "precdetect/analyze/device.h"
#include "precdetect/analyze/tensor_stats.h"
#include "precdetect/load/checkpoint.h"

namespace precdetect {

/// Loads a floating `record` into a libtorch tensor and computes its statistics on `device`. Both paths use the
/// same definitions and agree to float64 rounding. Throws Error(kDevice) if the CUDA path fails.
TensorStats analyze_tensor(const Checkpoint& checkpoint, const TensorRecord& record, const ComputeDevice& device);

}  // namespace precdetect
