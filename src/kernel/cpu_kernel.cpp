#include "precdetect/kernel/cpu_kernel.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "precdetect/core/parallel.h"
#include "precdetect/kernel/float_passes.h"
#include "precdetect/kernel/float_vectors.h"
#include "precdetect/kernel/ggml_blocks.h"
#include "precdetect/kernel/scalar_stats.h"

namespace precdetect {
namespace {

// Per-part counters are 32-bit: a part never counts more values than this in one pass.
constexpr size_t kMaxValuesPerPass = size_t{1} << 31;

/// Runs `reduce(begin, end)` over [begin, end) in passes of at most kMaxValuesPerPass values.
template <typename Reduce>
TensorStats in_passes(size_t begin, size_t end, Reduce reduce) {
  TensorStats total;
  for (size_t from = begin; from < end; from = std::min(end, from + kMaxValuesPerPass))
    total.merge(reduce(from, std::min(end, from + kMaxValuesPerPass)));
  return total;
}

// 8- and 16-bit dtypes hold at most 2^15 magnitudes: counting how often each occurs is one increment per value,
// and every statistic follows exactly from the counts. Values are read 64 bits at a time: on CPUs that do not
// let a load pass an earlier store whose address is still unknown (AMD's EPYC among them), reading each value
// after the previous increment serializes the loop. Equal codes close together (frequent: trained weights crowd a
// few hundred bf16 codes, fp8 weights a few dozen) would wait on each other's increments, so they count into tables
// of their own while the tables' hot codes fit the L1 cache: bf16 codes into one table per 64-bit word of a pair
// (four were slower), fp8 codes into one per byte of a word (eight tables of 128 counts). fp16 weights spread over
// 1024 codes per binade, and a second table only doubled the cache misses: one table. A range with fewer values
// than codes keeps one table: zeroing and merging more costs a small tensor more than it saves. The figures:
// docs/benchmarks.md, "Figures behind the code".
template <typename Raw>
TensorStats reduce_codes(DType dtype, const std::byte* data, size_t begin, size_t end) {
  constexpr unsigned kBits = 8 * sizeof(Raw), kPerWord = 64 / kBits;
  constexpr uint64_t kMagnitudeBits = (uint64_t{1} << (kBits - 1)) - 1;  // all but the sign bit
  constexpr size_t kTables = kBits == 8 ? kPerWord : 2;
  // The table of the j-th of the two words' values.
  constexpr auto table_of = [](unsigned j) { return kBits == 8 ? j % kPerWord : j / kPerWord; };
  const size_t codes = magnitude_code_count(dtype);
  const size_t tables = end - begin > codes && dtype != DType::F16 ? kTables : 1;
  std::vector<uint32_t> counts(tables * codes);
  std::array<uint32_t*, kTables> table;
  for (size_t t = 0; t < kTables; ++t) table[t] = counts.data() + (t % tables) * codes;
  size_t i = begin;
  for (; i + 2 * kPerWord <= end; i += 2 * kPerWord) {
    vectors::prefetch_ahead(data + i * sizeof(Raw));
    std::array<uint64_t, 2> words;
    std::memcpy(words.data(), data + i * sizeof(Raw), sizeof(words));  // little-endian: the first value lowest
    for (unsigned j = 0; j < 2 * kPerWord; ++j)
      ++table[table_of(j)][(words[j / kPerWord] >> (kBits * (j % kPerWord))) & kMagnitudeBits];
  }
  for (; i < end; ++i) ++table[0][vectors::load<Raw>(data, i) & kMagnitudeBits];
  for (size_t t = 1; t < tables; ++t)
    for (size_t code = 0; code < codes; ++code) counts[code] += counts[t * codes + code];
  return stats_from_code_counts(dtype, counts.data());
}

// Large tensors are split across the cores; below a million elements per core a thread costs more than it saves.
constexpr uint64_t kMinElementsPerThread = 1 << 20;

template <typename Reduce>
TensorStats reduce_tensor(uint64_t numel, Reduce reduce) {
  return reduce_in_parallel(numel, kMinElementsPerThread,
                            [=](uint64_t begin, uint64_t end) { return in_passes(begin, end, reduce); });
}

/// Blocks [begin, end) of a block-quantized tensor: dequantized a chunk at a time into a buffer small enough to
/// stay in cache, which the F32 pass then reads.
TensorStats reduce_quantized(KernelIsa isa, DType dtype, const std::byte* data, uint64_t begin, uint64_t end) {
  const uint64_t values = dtype_block_values(dtype), bytes = *dtype_bytes(dtype, values);
  const uint64_t chunk = std::max<uint64_t>(1, (uint64_t{1} << 14) / values);  // blocks per chunk: 16K values
  std::vector<float> buffer(chunk * values);
  TensorStats total;
  for (uint64_t block = begin; block < end; block += chunk) {
    uint64_t blocks = std::min(chunk, end - block);
    dequantize_blocks(dtype, data + block * bytes, blocks, buffer.data());
    total.merge(
        f32_pass(isa, reinterpret_cast<const std::byte*>(buffer.data()), 0, blocks * values, Exactness::kSkipped));
  }
  // Whether a dequantized value is exact in bf16 or fp16 says nothing of where the weights were stored
  // (classify/storage_cast reads that of F32 and F64 values only): not counted, and the tail's counts dropped.
  total.exactness_checked = total.bf16_exact = total.fp16_exact = 0;
  return total;
}

}  // namespace

TensorStats cpu_tensor_stats(const void* values, DType dtype, uint64_t numel) {
  return cpu_tensor_stats(values, dtype, numel, best_kernel_isa());
}

TensorStats cpu_tensor_stats(const void* values, DType dtype, uint64_t numel, KernelIsa isa) {
  const auto* data = static_cast<const std::byte*>(values);
  if (dtype_kind(dtype) == DTypeKind::kQuantized) {
    uint64_t block = dtype_block_values(dtype);
    return reduce_in_parallel(
        numel / block, std::max<uint64_t>(1, kMinElementsPerThread / block),
        [=](uint64_t begin, uint64_t end) { return reduce_quantized(isa, dtype, data, begin, end); });
  }
  switch (dtype) {
    case DType::F64:
      return reduce_tensor(numel, [=](size_t begin, size_t end) { return f64_pass(isa, data, begin, end); });
    case DType::F32:
      return reduce_tensor(numel, [=](size_t begin, size_t end) { return f32_pass(isa, data, begin, end); });
    case DType::F16:
    case DType::BF16:
      return reduce_tensor(numel,
                           [=](size_t begin, size_t end) { return reduce_codes<uint16_t>(dtype, data, begin, end); });
    case DType::F8_E4M3:
    case DType::F8_E5M2:
      return reduce_tensor(numel,
                           [=](size_t begin, size_t end) { return reduce_codes<uint8_t>(dtype, data, begin, end); });
    default:
      throw std::invalid_argument("cpu_tensor_stats: not a floating dtype");
  }
}

}  // namespace precdetect
