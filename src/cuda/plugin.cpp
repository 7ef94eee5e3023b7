// The CUDA plugin's entry point (libprecdetect_cuda.so): the one part of precdetect that links libtorch, loaded by
// the program only when a GPU is asked for (analyze/cuda_plugin.cpp), after the libtorch it was built against.
#include <ATen/Context.h>
#include <ATen/ops/from_blob.h>
#include <fmt/format.h>
#include <torch/cuda.h>

#include "precdetect/core/error.h"
#include "precdetect/cuda/cuda_analyzer.h"
#include "precdetect/cuda/torch_diff.h"
#include "precdetect/cuda/torch_dtype.h"
#include "precdetect/cuda/torch_stats.h"

namespace precdetect {
namespace {

class TorchCudaBackend final : public CudaBackend {
 public:
  int device_count() const override { return static_cast<int>(torch::cuda::device_count()); }

  std::unique_ptr<CudaAnalyzer> analyzer(int device_index) const override { return make_cuda_analyzer(device_index); }

  TensorStats device_stats(const DeviceValues& values) const override {
    try {
      auto options = at::TensorOptions()
                         .dtype(torch_scalar_type(values.dtype))
                         .device(at::kCUDA, static_cast<c10::DeviceIndex>(values.device_index));
      auto* data = const_cast<void*>(values.data);  // from_blob wants void*; nothing writes through it
      at::Tensor tensor = values.stride.empty() ? at::from_blob(data, values.shape, options)
                                                : at::from_blob(data, values.shape, values.stride, options);
      return torch_tensor_stats(tensor, values.dtype);
    } catch (const c10::Error& e) {
      throw Error(ErrorCode::kDevice,
                  fmt::format("a tensor on cuda:{}: {}", values.device_index, e.what_without_backtrace()));
    }
  }

  DiffStats diff(const HostValues& base, const HostValues& other, const DiffOptions& options,
                 int device_index) const override {
    try {
      return diff_tensors_with_ops(host_tensor(base), host_tensor(other), options,
                                   at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device_index)));
    } catch (const c10::Error& e) {
      throw Error(ErrorCode::kDevice, fmt::format("diff on cuda:{}: {}", device_index, e.what_without_backtrace()));
    }
  }
};

}  // namespace
}  // namespace precdetect

extern "C" __attribute__((visibility("default"))) const precdetect::CudaBackend* precdetect_cuda_backend_v1() {
  static const precdetect::TorchCudaBackend backend;
  return &backend;
}
