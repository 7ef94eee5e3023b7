#pragma once
/// The plugin's CudaAnalyzer: tensors staged to the GPU (cuda_upload.h) and summarized there by libtorch ops
/// (torch_stats.h), one tensor's statistics in flight while the next is queued.

#include <memory>

#include "precdetect/analyze/device_backend.h"

namespace precdetect {

std::unique_ptr<CudaAnalyzer> make_cuda_analyzer(int device_index);

}  // namespace precdetect
