#include "precdetect/analyze/analyzer.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <unordered_map>
#include <vector>

#include "precdetect/analyze/cpu_kernel.h"
#include "precdetect/load/host_values.h"
#include "precdetect/quantize/scheme.h"

namespace precdetect {
namespace {

using ScaleRecords = LinkedValues::Parts;

void release(const Checkpoint& checkpoint, const TensorRecord& record) {
  checkpoint.files[record.file]->release(record.offset, record.storage_nbytes);
}

/// The kernel reads values in place where it can; else a copy of them (read into memory, bytes swapped, a
/// strided view gathered), or for block-quantized values their bytes; a linked weight through its scheme.
TensorStats cpu_stats(const Checkpoint& checkpoint, const TensorRecord& record, const ScaleRecords& scales) {
  if (record.scaled_by) return quantized_stats(LinkedValues(checkpoint, record, scales));
  if (auto bytes = values_in_place(checkpoint, record))
    return cpu_tensor_stats(bytes->data(), record.dtype, record.numel);
  if (dtype_kind(record.dtype) == DTypeKind::kQuantized) {
    std::vector<std::byte> bytes(record.nbytes);
    checkpoint.files[record.file]->read(record.offset, bytes);
    return cpu_tensor_stats(bytes.data(), record.dtype, record.numel);
  }
  HostValues values = read_values(checkpoint, record);
  return cpu_tensor_stats(values.data(), record.dtype, record.numel);
}

/// The scale tensors of `checkpoint` by name, for its scaled weights.
ScaleRecords scale_records(const Checkpoint& checkpoint) {
  ScaleRecords scales;
  for (const TensorRecord& record : checkpoint.tensors)
    if (record.role == TensorRole::kScale) scales.emplace(record.name, &record);
  return scales;
}

}  // namespace

Analyzer::Analyzer(const ComputeDevice& device) {
  if (device.cuda) cuda_ = cuda_backend().analyzer(device.index);
}

std::vector<TensorStats> Analyzer::analyze(const Checkpoint& checkpoint, std::span<const TensorRecord* const> records) {
  // On CUDA, block-quantized tensors are dequantized and analyzed on the host (libtorch has no dtype for them),
  // and so are scaled fp8 weights (the plugin computes no products).
  auto on_gpu = [&](const TensorRecord* record) {
    return cuda_ && dtype_kind(record->dtype) != DTypeKind::kQuantized && !record->scaled_by;
  };
  ScaleRecords scales = scale_records(checkpoint);
  std::vector<const TensorRecord*> gpu_records;
  std::copy_if(records.begin(), records.end(), std::back_inserter(gpu_records), on_gpu);
  std::vector<TensorStats> gpu_stats =
      gpu_records.empty() ? std::vector<TensorStats>() : cuda_->analyze(checkpoint, gpu_records);
  std::vector<TensorStats> stats;
  size_t next_gpu = 0;
  for (const TensorRecord* record : records) {
    if (on_gpu(record)) {
      stats.push_back(gpu_stats[next_gpu++]);
      continue;
    }
    stats.push_back(cpu_stats(checkpoint, *record, scales));
    release(checkpoint, *record);
  }
  return stats;
}

}  // namespace precdetect
