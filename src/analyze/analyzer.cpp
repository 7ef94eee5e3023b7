#include "precdetect/analyze/analyzer.h"

#include <algorithm>
#include <iterator>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "precdetect/analyze/cpu_kernel.h"
#include "precdetect/core/read_ahead.h"
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

/// The bytes of values read ahead of the kernel: the window each model scanned at once holds beyond the tensor in
/// hand (--jobs models at once: 4 x 64 MiB at most by default). Two 7B-sized matrices: enough to keep a transfer
/// going while the kernel runs (docs/benchmarks.md, "Remote models").
constexpr uint64_t kReadAheadBudget = uint64_t{64} << 20;

/// True for a tensor whose values come through read() (a pread or remote source: no mapping to read in place)
/// and need nothing beside them (no scales, no block codes): they can be read ahead, on a thread of their own.
bool reads_ahead(const Checkpoint& checkpoint, const TensorRecord& record) {
  return !record.scaled_by && !checkpoint.files[record.file]->zero_copy() &&
         dtype_kind(record.dtype) != DTypeKind::kQuantized;
}

/// The statistics of `records` on the CPU, in order. Where values come through read(), the next tensors are read
/// while the kernel runs on this one (within kReadAheadBudget): the network's or the disk's time overlaps the
/// kernel's, as the CUDA path's staging does.
std::vector<TensorStats> cpu_analyze(const Checkpoint& checkpoint, const std::vector<const TensorRecord*>& records,
                                     const ScaleRecords& scales) {
  std::vector<TensorStats> stats;
  auto ahead_of = [&](size_t i) { return reads_ahead(checkpoint, *records[i]); };
  bool any = std::any_of(records.begin(), records.end(), [&](auto* r) { return reads_ahead(checkpoint, *r); });
  std::optional<ReadAhead<std::optional<HostValues>>> values;
  if (any)
    values.emplace(
        records.size(), kReadAheadBudget, [&](size_t i) { return ahead_of(i) ? records[i]->nbytes : 0; },
        [&](size_t i) { return ahead_of(i) ? std::optional(read_values(checkpoint, *records[i])) : std::nullopt; });
  for (const TensorRecord* record : records) {
    std::optional<HostValues> read = values ? values->next() : std::nullopt;
    stats.push_back(read ? cpu_tensor_stats(read->data(), record->dtype, record->numel)
                         : cpu_stats(checkpoint, *record, scales));
    release(checkpoint, *record);
  }
  return stats;
}

/// cpu_analyze over `records` taken in the order their bytes lie, file by file (a read-ahead reads a remote file
/// front to back: consecutive ranges, and a --verify hash that grows as it is read); statistics in `records`' order.
std::vector<TensorStats> cpu_analyze_in_file_order(const Checkpoint& checkpoint,
                                                   const std::vector<const TensorRecord*>& records,
                                                   const ScaleRecords& scales) {
  std::vector<size_t> order(records.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(records[a]->file, records[a]->offset) < std::tie(records[b]->file, records[b]->offset);
  });
  std::vector<const TensorRecord*> sorted;
  for (size_t i : order) sorted.push_back(records[i]);
  std::vector<TensorStats> sorted_stats = cpu_analyze(checkpoint, sorted, scales);
  std::vector<TensorStats> stats(records.size());
  for (size_t k = 0; k < order.size(); ++k) stats[order[k]] = std::move(sorted_stats[k]);
  return stats;
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
  std::vector<const TensorRecord*> cpu_records;
  std::copy_if(records.begin(), records.end(), std::back_inserter(cpu_records), [&](auto* r) { return !on_gpu(r); });
  std::vector<TensorStats> gpu_stats =
      gpu_records.empty() ? std::vector<TensorStats>() : cuda_->analyze(checkpoint, gpu_records);
  std::vector<TensorStats> cpu = cpu_analyze_in_file_order(checkpoint, cpu_records, scales);
  std::vector<TensorStats> stats;
  size_t next_gpu = 0, next_cpu = 0;
  for (const TensorRecord* record : records) stats.push_back(on_gpu(record) ? gpu_stats[next_gpu++] : cpu[next_cpu++]);
  return stats;
}

}  // namespace precdetect
