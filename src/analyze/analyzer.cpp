#include "precdetect/analyze/analyzer.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "precdetect/analyze/cpu_kernel.h"
#include "precdetect/analyze/torch_stats.h"
#include "precdetect/core/error.h"
#include "precdetect/load/tensor_loader.h"

namespace precdetect {
namespace {

Error device_error(const ComputeDevice& device, const std::string& what, const c10::Error& e) {
  return Error(ErrorCode::kDevice, fmt::format("{} on {}: {}", what, device.name(), e.what_without_backtrace()));
}

}  // namespace

Analyzer::Analyzer(const ComputeDevice& device) : device_(device) {
  if (!device.cuda) return;
  try {
    uploader_ = std::make_unique<CudaUploader>(device.index);
  } catch (const c10::Error& e) {
    throw device_error(device, "staging buffers", e);
  }
}

TensorStats Analyzer::analyze(const Checkpoint& checkpoint, const TensorRecord& record) {
  if (!uploader_) {
    at::Tensor values = load_tensor(checkpoint, record).contiguous();  // a copy only for strided views
    return cpu_tensor_stats(values.data_ptr(), record.dtype, record.numel);
  }
  try {
    return torch_tensor_stats(uploader_->upload(checkpoint, record));
  } catch (const c10::Error& e) {
    throw device_error(device_, fmt::format("tensor `{}`", record.name), e);
  }
}

}  // namespace precdetect
