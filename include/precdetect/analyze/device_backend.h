#pragma once
/// The CUDA path, as the torch-free program sees it: an interface that the CUDA plugin (libprecdetect_cuda.so,
/// src/cuda/, the one part of precdetect that links libtorch) implements. analyze/cuda_plugin.cpp loads the plugin
/// only when a GPU is asked for, or present with --device auto, together with the libtorch of the environment.

#include <memory>
#include <span>
#include <vector>

#include "precdetect/kernel/diff_options.h"
#include "precdetect/kernel/diff_stats.h"
#include "precdetect/kernel/host_values.h"
#include "precdetect/kernel/tensor_stats.h"
#include "precdetect/load/checkpoint.h"

namespace precdetect {

/// One per thread of work: its staging buffers and copy stream on one device.
class CudaAnalyzer {
 public:
  virtual ~CudaAnalyzer() = default;
  /// The statistics of `records` (floating, not block-quantized), in order, with the CPU kernel's definitions.
  /// A host thread stages the next tensors while the GPU computes; each tensor's pages are released once staged.
  /// Throws Error(kDevice) naming the tensor.
  virtual std::vector<TensorStats> analyze(const Checkpoint& checkpoint,
                                           std::span<const TensorRecord* const> records) = 0;
};

/// A tensor already on a GPU (precdetect.check of a CUDA model), as DLPack describes it.
struct DeviceValues {
  const void* data = nullptr;  ///< its first element
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;  ///< in elements; empty: contiguous row-major
  int device_index = 0;
};

class CudaBackend {
 public:
  virtual ~CudaBackend() = default;
  /// CUDA devices the loaded libtorch can use.
  virtual int device_count() const = 0;
  virtual std::unique_ptr<CudaAnalyzer> analyzer(int device_index) const = 0;
  /// The statistics of a tensor on its GPU, read where it is. Throws Error(kDevice).
  virtual TensorStats device_stats(const DeviceValues& values) const = 0;
  /// diff_values on CUDA device `device_index`.
  virtual DiffStats diff(const HostValues& base, const HostValues& other, const DiffOptions& options,
                         int device_index) const = 0;
};

/// The plugin's entry point: `extern "C" const CudaBackend* precdetect_cuda_backend_v1()`. The version is the
/// interface's: a plugin and program are built and shipped together, and the loader checks its torch release.
inline constexpr const char* kCudaBackendEntry = "precdetect_cuda_backend_v1";
using CudaBackendEntry = const CudaBackend* (*)();

/// The loaded plugin. Throws Error(kDevice) with one line saying why it cannot be loaded (no torch found, a torch
/// release other than the plugin's, a torch without CUDA, the dynamic linker's first complaint).
const CudaBackend& cuda_backend();

}  // namespace precdetect
