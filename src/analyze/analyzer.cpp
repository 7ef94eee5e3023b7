#include "precdetect/analyze/analyzer.h"

#include <algorithm>
#include <iterator>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "precdetect/core/read_ahead.h"
#include "precdetect/kernel/cpu_kernel.h"
#include "precdetect/load/record_values.h"
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

/// Free buffers kept for values read ahead: at most this many bytes (the largest kept first), so a model's tensors of
/// up to that size cycle through buffers already in memory; none under kMinKeptBuffer (malloc keeps those itself).
constexpr uint64_t kKeptBuffers = 2 * kReadAheadBudget;
constexpr uint64_t kMinKeptBuffer = uint64_t{1} << 20;

/// Buffers values are read ahead into, used again: a fresh buffer's pages are faulted in and zeroed by the kernel
/// (and zeroed again by resize) for every tensor, a third of a remote full scan's CPU (docs/benchmarks.md, "Remote
/// models"). Taken on the read-ahead's thread, given back on the kernel's.
class BufferPool {
 public:
  /// The smallest free buffer that holds `bytes`, else an empty one.
  std::vector<std::byte> take(uint64_t bytes) {
    std::lock_guard lock(mutex_);
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->capacity() >= bytes && (best == free_.end() || it->capacity() < best->capacity())) best = it;
    if (best == free_.end()) return {};
    std::vector<std::byte> buffer = std::move(*best);
    free_.erase(best);
    kept_ -= buffer.capacity();
    return buffer;
  }

  void give(std::vector<std::byte> buffer) {
    if (buffer.capacity() < kMinKeptBuffer) return;
    std::lock_guard lock(mutex_);
    kept_ += buffer.capacity();
    free_.push_back(std::move(buffer));
    while (kept_ > kKeptBuffers) {  // the smallest go first
      auto smallest = std::min_element(free_.begin(), free_.end(),
                                       [](const auto& a, const auto& b) { return a.capacity() < b.capacity(); });
      kept_ -= smallest->capacity();
      free_.erase(smallest);
    }
  }

 private:
  std::mutex mutex_;
  std::vector<std::vector<std::byte>> free_;
  uint64_t kept_ = 0;
};

/// A tensor's values read ahead, in a buffer of the pool's that they may borrow.
struct ReadValues {
  std::vector<std::byte> buffer;
  std::optional<HostValues> values;
};

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
  BufferPool buffers;  // before the read-ahead, whose values borrow its buffers
  std::optional<ReadAhead<ReadValues>> values;
  if (any)
    values.emplace(
        records.size(), kReadAheadBudget, [&](size_t i) { return ahead_of(i) ? records[i]->nbytes : 0; },
        [&](size_t i) {
          ReadValues read;
          if (!ahead_of(i)) return read;
          read.buffer = buffers.take(records[i]->nbytes);
          read.values.emplace(read_values(checkpoint, *records[i], &read.buffer));
          return read;
        });
  for (const TensorRecord* record : records) {
    ReadValues read = values ? values->next() : ReadValues{};
    stats.push_back(read.values ? cpu_tensor_stats(read.values->data(), record->dtype, record->numel)
                                : cpu_stats(checkpoint, *record, scales));
    read.values.reset();
    buffers.give(std::move(read.buffer));
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
  std::vector<const TensorRecord*> sorted(records.size());
  std::transform(order.begin(), order.end(), sorted.begin(), [&](size_t i) { return records[i]; });
  std::vector<TensorStats> sorted_stats = cpu_analyze(checkpoint, sorted, scales);
  std::vector<TensorStats> stats(records.size());
  for (size_t k = 0; k < order.size(); ++k) stats[order[k]] = sorted_stats[k];
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
