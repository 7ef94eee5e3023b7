#include "precdetect/cuda/cuda_analyzer.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <fmt/format.h>

#include <optional>

#include "precdetect/core/error.h"
#include "precdetect/core/read_ahead.h"
#include "precdetect/cuda/cuda_upload.h"
#include "precdetect/cuda/torch_stats.h"

namespace precdetect {
namespace {

Error device_error(int device_index, const std::string& what, const c10::Error& e) {
  return Error(ErrorCode::kDevice, fmt::format("{} on cuda:{}: {}", what, device_index, e.what_without_backtrace()));
}

/// How far the staging thread may run ahead, in bytes staged and not yet taken: device memory, not host
/// memory (the staging buffers are reused). One tensor, whatever its size, when none is waiting.
constexpr uint64_t kStagedAheadBytes = 256 << 20;

/// A tensor's statistics still being computed on the GPU: its summary on its way into pinned host memory.
class PendingStats {
 public:
  PendingStats(const at::Tensor& values, DType dtype, const c10::Stream& stream) : dtype_(dtype) {
    if (values.numel() == 0) return;
    at::Tensor summary = torch_stats_summary(values, dtype);
    summary_ = at::empty(summary.sizes(), summary.options().device(at::kCPU).pinned_memory(true));
    summary_.copy_(summary, /*non_blocking=*/true);
    copied_.record(stream);
  }
  TensorStats wait() const {
    if (!summary_.defined()) return {};
    copied_.synchronize();
    return stats_from_summary(dtype_, summary_);
  }

 private:
  DType dtype_;
  at::Tensor summary_;
  c10::Event copied_{c10::DeviceType::CUDA};
};

class TorchCudaAnalyzer final : public CudaAnalyzer {
 public:
  explicit TorchCudaAnalyzer(int device_index) : device_index_(device_index) {
    try {
      uploader_.emplace(device_index);
    } catch (const c10::Error& e) {
      throw device_error(device_index, "staging buffers", e);
    }
  }

  std::vector<TensorStats> analyze(const Checkpoint& checkpoint,
                                   std::span<const TensorRecord* const> records) override {
    c10::Device device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device_index_));
    c10::Stream stream = c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getStream(device);
    std::vector<TensorStats> stats;
    const TensorRecord* current = nullptr;  // named in errors
    try {
      // The host stages tensors on a thread of its own (staging is most of its time, docs/benchmarks.md) while
      // this one queues each tensor's statistics and takes the last one's results.
      ReadAhead<CudaUploader::Upload> uploads(
          records.size(), kStagedAheadBytes, [&](size_t i) { return records[i]->storage_nbytes; },
          [&](size_t i) {
            CudaUploader::Upload upload = uploader_->upload(checkpoint, *records[i], stream);
            // its bytes are in staging buffers or on the device now
            checkpoint.files[records[i]->file]->release(records[i]->offset, records[i]->storage_nbytes);
            return upload;
          });
      std::optional<PendingStats> in_flight;
      for (const TensorRecord* record : records) {
        current = record;
        CudaUploader::Upload upload = uploads.next();
        upload.ready_on(stream);
        PendingStats next(upload.values, record->dtype, stream);
        if (in_flight) stats.push_back(in_flight->wait());
        in_flight.emplace(std::move(next));
      }
      if (in_flight) stats.push_back(in_flight->wait());
    } catch (const c10::Error& e) {
      throw device_error(device_index_, fmt::format("tensor `{}`", current ? current->name : "?"), e);
    }
    return stats;
  }

 private:
  int device_index_;
  std::optional<CudaUploader> uploader_;
};

}  // namespace

std::unique_ptr<CudaAnalyzer> make_cuda_analyzer(int device_index) {
  return std::make_unique<TorchCudaAnalyzer>(device_index);
}

}  // namespace precdetect
