#pragma once
/// Stage 3: the statistics of stored tensors, on the CPU (our kernel) or a CUDA device (libtorch ops).

#include <memory>

#include "precdetect/analyze/device.h"
#include "precdetect/analyze/tensor_stats.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/cuda_upload.h"

namespace precdetect {

/// One per thread of work: on CUDA it holds that thread's staging buffers and copy stream.
class Analyzer {
 public:
  explicit Analyzer(const ComputeDevice& device);

  /// Loads a floating `record` into a libtorch tensor and computes its statistics. Both devices use the same
  /// definitions and agree to float64 rounding. Throws Error(kDevice) if the CUDA path fails.
  TensorStats analyze(const Checkpoint& checkpoint, const TensorRecord& record);

 private:
  ComputeDevice device_;
  std::unique_ptr<CudaUploader> uploader_;  ///< on CUDA only
};

}  // namespace precdetect
