#include "precdetect/analyze/analyzer.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "precdetect/analyze/cpu_kernel.h"
#include "precdetect/analyze/torch_stats.h"
#include "precdetect/core/error.h"
#include "precdetect/load/tensor_loader.h"

namespace precdetect {
namespace {

TensorStats analyze_on_cuda(const at::Tensor& host, const ComputeDevice& device, const TensorRecord& record) {
  try {
    // Bytes travel as uint8 into a fresh (aligned) device allocation, then are viewed as the dtype there:
    // aliasing file bytes at an unaligned device address is a sticky CUDA error.
    at::Tensor raw = host.reshape(-1).view(at::kByte);
    at::Tensor on_device = raw.to(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device.index)));
    return torch_tensor_stats(on_device.view(host.scalar_type()));
  } catch (const c10::Error& e) {
    throw Error(ErrorCode::kDevice,
                fmt::format("tensor `{}` on {}: {}", record.name, device.name(), e.what_without_backtrace()));
  }
}

}  // namespace

TensorStats analyze_tensor(const Checkpoint& checkpoint, const TensorRecord& record, const ComputeDevice& device) {
  at::Tensor values = load_tensor(checkpoint, record).contiguous();  // a copy only for strided views
  if (device.cuda) return analyze_on_cuda(values, device, record);
  return cpu_tensor_stats(values.data_ptr(), record.dtype, record.numel);
}

}  // namespace precdetect
