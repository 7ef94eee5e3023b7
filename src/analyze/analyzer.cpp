#include "precdetect/analyze/analyzer.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <vector>

#include "precdetect/analyze/cpu_kernel.h"
#include "precdetect/analyze/torch_stats.h"
#include "precdetect/core/error.h"
#include "precdetect/core/read_ahead.h"
#include "precdetect/load/tensor_loader.h"

namespace precdetect {
namespace {

Error device_error(const ComputeDevice& device, const std::string& what, const c10::Error& e) {
  return Error(ErrorCode::kDevice, fmt::format("{} on {}: {}", what, device.name(), e.what_without_backtrace()));
}

/// How far the staging thread may run ahead, in bytes staged and not yet taken: device memory, not host
/// memory (the staging buffers are reused). One tensor, whatever its size, when none is waiting.
constexpr uint64_t kStagedAheadBytes = 256 << 20;

void release(const Checkpoint& checkpoint, const TensorRecord& record) {
  checkpoint.files[record.file]->release(record.offset, record.storage_nbytes);
}

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

/// The kernel reads values in place where it can; else a tensor of them (read into memory, bytes swapped, a
/// strided view made contiguous), or for block-quantized values, which libtorch has no dtype for, their bytes.
TensorStats cpu_stats(const Checkpoint& checkpoint, const TensorRecord& record) {
  if (auto bytes = values_in_place(checkpoint, record))
    return cpu_tensor_stats(bytes->data(), record.dtype, record.numel);
  if (dtype_kind(record.dtype) == DTypeKind::kQuantized) {
    std::vector<std::byte> bytes(record.nbytes);
    checkpoint.files[record.file]->read(record.offset, bytes);
    return cpu_tensor_stats(bytes.data(), record.dtype, record.numel);
  }
  at::Tensor values = load_tensor(checkpoint, record).contiguous();
  return cpu_tensor_stats(values.data_ptr(), record.dtype, record.numel);
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

std::vector<TensorStats> Analyzer::analyze(const Checkpoint& checkpoint, std::span<const TensorRecord* const> records) {
  // On CUDA, block-quantized tensors are dequantized and analyzed on the host: libtorch has no dtype for them.
  auto on_gpu = [&](const TensorRecord* record) {
    return uploader_ && dtype_kind(record->dtype) != DTypeKind::kQuantized;
  };
  std::vector<const TensorRecord*> gpu_records;
  std::copy_if(records.begin(), records.end(), std::back_inserter(gpu_records), on_gpu);
  std::vector<TensorStats> gpu_stats =
      gpu_records.empty() ? std::vector<TensorStats>() : analyze_on_cuda(checkpoint, gpu_records);
  std::vector<TensorStats> stats;
  size_t next_gpu = 0;
  for (const TensorRecord* record : records) {
    if (on_gpu(record)) {
      stats.push_back(gpu_stats[next_gpu++]);
      continue;
    }
    stats.push_back(cpu_stats(checkpoint, *record));
    release(checkpoint, *record);
  }
  return stats;
}

std::vector<TensorStats> Analyzer::analyze_on_cuda(const Checkpoint& checkpoint,
                                                   std::span<const TensorRecord* const> records) {
  c10::Device device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device_.index));
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
          release(checkpoint, *records[i]);  // its bytes are in staging buffers or on the device now
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
    throw device_error(device_, fmt::format("tensor `{}`", current->name), e);
  }
  return stats;
}

}  // namespace precdetect
