#include "precdetect/kernel/cpu_kernel.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "precdetect/core/parallel.h"
#include "precdetect/kernel/float_vectors.h"
#include "precdetect/kernel/ggml_blocks.h"
#include "precdetect/kernel/scalar_stats.h"

namespace precdetect {
namespace {

using vectors::Doubles, vectors::Floats, vectors::Ints, vectors::Words, vectors::kWidth;

/// Value `i` of the `T`s stored at `data`, which may lie at any address (values are read in place in a mapped
/// file, where .npz members and Flax arrays start at arbitrary offsets).
template <typename T>
T load(const std::byte* data, size_t i) {
  T value;
  std::memcpy(&value, data + i * sizeof(T), sizeof(T));
  return value;
}

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
// after the previous increment serializes the loop. Consecutive 64-bit words count into two tables, so that equal
// codes in neighbouring words (frequent: trained weights crowd a few hundred codes) do not wait on each other's
// increments; four tables were no better. Ranges with fewer values than codes keep one table: zeroing and merging
// a second costs a small tensor more than it saves. The figures: docs/benchmarks.md, "Figures behind the code".
template <typename Raw>
TensorStats reduce_codes(DType dtype, const std::byte* data, size_t begin, size_t end) {
  constexpr unsigned kBits = 8 * sizeof(Raw);
  constexpr uint64_t kMagnitudeBits = (uint64_t{1} << (kBits - 1)) - 1;  // all but the sign bit
  size_t codes = magnitude_code_count(dtype);
  bool two_tables = end - begin > codes;
  std::vector<uint32_t> counts(two_tables ? 2 * codes : codes);
  uint32_t* even = counts.data();
  uint32_t* odd = two_tables ? even + codes : even;
  size_t i = begin;
  for (constexpr size_t kPerWord = 64 / kBits; i + 2 * kPerWord <= end; i += 2 * kPerWord) {
    std::array<uint64_t, 2> words;
    std::memcpy(words.data(), data + i * sizeof(Raw), sizeof(words));  // little-endian: the first value lowest
    for (unsigned shift = 0; shift < 64; shift += kBits) {
      ++even[(words[0] >> shift) & kMagnitudeBits];
      ++odd[(words[1] >> shift) & kMagnitudeBits];
    }
  }
  for (; i < end; ++i) ++even[load<Raw>(data, i) & kMagnitudeBits];
  if (two_tables)
    for (size_t code = 0; code < codes; ++code) even[code] += odd[code];
  return stats_from_code_counts(dtype, even);
}

constexpr float kInf = std::numeric_limits<float>::infinity();

/// F32 accumulators, kWidth lanes at a time: extrema and the sum of squares, the statistics every value adds to
/// (add_magnitude's first half; zeros and Inf are counted by NarrowFormatLanes, NaN by the loop). The loop keeps
/// two, one per chain of consecutive vectors, so that their float64 adds do not wait on each other. Plain members,
/// not arrays indexed by chain: GCC then keeps all of them in registers (with arrays it spilled the squares to
/// the stack, and every add waited on a store and a reload).
struct FloatVectorLanes {
  Floats lo = Floats{} + kInf, hi = Floats{} - kInf;
  Doubles squares_low{}, squares_high{};

  void add(Floats a, Ints is_nan) {
    lo = a < lo ? a : lo;  // comparisons with NaN are false: NaN never wins
    hi = a > hi ? a : hi;
    Floats kept = std::bit_cast<Floats>(std::bit_cast<Ints>(a) & ~is_nan);  // NaN -> +0 for the sum of squares
    Doubles low = vectors::low_half(kept), high = vectors::high_half(kept);
    squares_low += low * low;  // exact: a float's square fits a double
    squares_high += high * high;
  }
  void flush_into(TensorStats& total) const {
    for (size_t i = 0; i < kWidth; ++i) {
      total.abs_min = std::fmin(total.abs_min, static_cast<double>(lo[i]));
      total.abs_max = std::fmax(total.abs_max, static_cast<double>(hi[i]));
    }
    for (size_t i = 0; i < kWidth / 2; ++i) total.sum_squares += squares_low[i] + squares_high[i];
  }
};

/// F32 counts against narrower formats (add_wide_magnitude's limits and exactness), and of zeros and Inf, kWidth
/// lanes at a time. Only values above the lowest limit or with their low 13 mantissa bits zero can count (zero
/// and Inf have them zero), and most vectors of trained fp32 weights hold neither: the loop tests each pair of
/// vectors (a few instructions and a branch) and adds the pair only when a lane may count. Without `kExactness`
/// (dequantized values, whose exactness says nothing: most are exact in bf16) only zeros, Inf and the counts above
/// the limits are kept.
template <bool kExactness>
struct NarrowFormatLanes {
  Ints above_seed{}, above_e4m3{}, above_e5m2{}, above_fp16{};
  Ints bf16_exact{}, fp16_exact{}, zeros{}, infs{};

  static Ints may_count(Floats a) {
    if constexpr (kExactness)
      return (a > static_cast<float>(limits::kSeedThreshold)) | ((std::bit_cast<Words>(a) & 0x1FFF) == 0);
    else
      return (a > static_cast<float>(limits::kSeedThreshold)) | (a == 0);  // Inf is above the threshold
  }

  void add(Floats a) {
    // a != a: NaN, lane by lane (std::isnan has no vector form). The kernel is linted since it moved into the
    // fuzzed library beside the quantization schemes.
    Ints is_nan = a != a, is_inf = a == kInf;  // NOLINT(misc-redundant-expression)
    Floats finite = is_inf ? Floats{} : a;
    zeros -= a == 0;
    infs -= is_inf;
    above_seed -= finite > static_cast<float>(limits::kSeedThreshold);
    above_e4m3 -= finite > static_cast<float>(limits::kE4m3Max);
    above_e5m2 -= finite > static_cast<float>(limits::kE5m2Max);
    above_fp16 -= finite > static_cast<float>(limits::kFp16Max);
    if constexpr (!kExactness) return;
    Words bits = std::bit_cast<Words>(a);
    bf16_exact -= ((bits & 0xFFFF) == 0) & ~is_nan;  // bf16 is float32's upper half
    // fp16: normals keep 10 mantissa bits; below 2^-14 a value must be a multiple of 2^-24, which adding and
    // subtracting 0.5 (ulp 2^-24) leaves unchanged.
    Ints fp16_normal = ((bits & 0x1FFF) == 0) & (a >= 0x1p-14f) & (a <= static_cast<float>(limits::kFp16Max));
    Ints fp16_small = (a < 0x1p-14f) & (((a + 0.5f) - 0.5f) == a);
    fp16_exact -= fp16_normal | fp16_small | is_inf;
  }
  void flush_into(TensorStats& total) const {
    for (size_t i = 0; i < kWidth; ++i) {
      auto count = [](int32_t lane) { return static_cast<uint64_t>(lane); };
      total.above_1e2 += count(above_seed[i]);
      total.above_e4m3_max += count(above_e4m3[i]);
      total.above_e5m2_max += count(above_e5m2[i]);
      total.above_fp16_max += count(above_fp16[i]);
      total.bf16_exact += count(bf16_exact[i]);
      total.fp16_exact += count(fp16_exact[i]);
      total.zeros += count(zeros[i]);
      total.infs += count(infs[i]);
    }
  }
};

constexpr size_t kBlock = 1 << 14;  // flush interval: bounds float64 summation error and int32 lane counts

/// The exponent histogram of F32 magnitudes, counted eight values at a time inside the vector loop (two per
/// 64-bit load, see reduce_codes for why), one table per position so that runs of equal exponents (most of a
/// trained tensor's values share a handful) do not wait on each other's increments. The increments are scalar
/// stores; between the vector work they cost less than in a pass of their own (docs/benchmarks.md, "Figures behind
/// the code"; tests/bench/kernel_bench.cpp times it).
class ExponentCounter {
 public:
  static constexpr size_t kValues = 8;

  void count(const std::byte* values) {
    std::array<uint64_t, kValues / 2> words;
    std::memcpy(words.data(), values, sizeof(words));  // little-endian: the first value in the low bits
    for (size_t k = 0; k < words.size(); ++k) {
      ++tables_[2 * k][(words[k] >> 23) & 0xFF];
      ++tables_[2 * k + 1][(words[k] >> 55) & 0xFF];
    }
  }
  /// Zeros landed in bin 0 and Inf/NaN in bin 255; both are counted elsewhere and left out here.
  void flush_into(TensorStats& total, uint64_t zeros) const {
    for (const auto& table : tables_)
      for (int bin = 0; bin < ExponentHistogram::kBins - 1; ++bin) total.exponents.counts[bin] += table[bin];
    total.exponents.counts[0] -= zeros;
  }

 private:
  std::array<std::array<uint32_t, ExponentHistogram::kBins>, kValues> tables_{};
};

/// One pass over F32 values [begin, end): two vectors at a time, then the scalar definitions for the tail; without
/// `kExactness`, no bf16/fp16 exactness (NarrowFormatLanes).
template <bool kExactness = true>
TensorStats reduce_floats(const std::byte* data, size_t begin, size_t end) {
  static_assert(ExponentCounter::kValues == 2 * kWidth);
  TensorStats total;
  ExponentCounter exponents;
  size_t i = begin;
  while (i + 2 * kWidth <= end) {
    FloatVectorLanes lanes_a, lanes_b;
    NarrowFormatLanes<kExactness> narrow;
    Ints nans{};
    for (size_t block_end = std::min(end, i + kBlock); i + 2 * kWidth <= block_end; i += 2 * kWidth) {
      Floats a = vectors::magnitudes(vectors::f32_values(data + 4 * i));
      Floats b = vectors::magnitudes(vectors::f32_values(data + 4 * (i + kWidth)));
      Ints a_nan = a != a, b_nan = b != b;  // NOLINT(misc-redundant-expression): NaN, lane by lane
      nans -= a_nan;
      nans -= b_nan;
      lanes_a.add(a, a_nan);
      lanes_b.add(b, b_nan);
      exponents.count(data + 4 * i);  // before the branch: after it, GCC's code was slower (docs/benchmarks.md)
      if (vectors::any(NarrowFormatLanes<kExactness>::may_count(a) | NarrowFormatLanes<kExactness>::may_count(b))) {
        narrow.add(a);
        narrow.add(b);
      }
    }
    lanes_a.flush_into(total);
    lanes_b.flush_into(total);
    narrow.flush_into(total);
    for (size_t k = 0; k < kWidth; ++k) total.nans += static_cast<uint64_t>(nans[k]);
  }
  total.numel = i - begin;
  total.exactness_checked = total.numel - total.nans;
  exponents.flush_into(total, total.zeros);
  TensorStats tail;
  for (; i < end; ++i) add_wide_magnitude(tail, std::fabs(static_cast<double>(load<float>(data, i))));
  total.merge(tail);
  return total;
}

/// F64 values [begin, end), one at a time (rare in checkpoints), summed per block like the vector path.
TensorStats reduce_doubles(const std::byte* data, size_t begin, size_t end) {
  TensorStats total;
  for (size_t block = begin; block < end; block += kBlock) {
    TensorStats part;
    for (size_t i = block; i < std::min(end, block + kBlock); ++i)
      add_wide_magnitude(part, std::fabs(load<double>(data, i)));
    total.merge(part);
  }
  return total;
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
TensorStats reduce_quantized(DType dtype, const std::byte* data, uint64_t begin, uint64_t end) {
  const uint64_t values = dtype_block_values(dtype), bytes = *dtype_bytes(dtype, values);
  const uint64_t chunk = std::max<uint64_t>(1, (uint64_t{1} << 14) / values);  // blocks per chunk: 16K values
  std::vector<float> buffer(chunk * values);
  TensorStats total;
  for (uint64_t block = begin; block < end; block += chunk) {
    uint64_t blocks = std::min(chunk, end - block);
    dequantize_blocks(dtype, data + block * bytes, blocks, buffer.data());
    total.merge(
        reduce_floats</*kExactness=*/false>(reinterpret_cast<const std::byte*>(buffer.data()), 0, blocks * values));
  }
  // Whether a dequantized value is exact in bf16 or fp16 says nothing of where the weights were stored
  // (classify/storage_cast reads that of F32 and F64 values only): not counted, and the tail's counts dropped.
  total.exactness_checked = total.bf16_exact = total.fp16_exact = 0;
  return total;
}

}  // namespace

TensorStats cpu_tensor_stats(const void* values, DType dtype, uint64_t numel) {
  const auto* data = static_cast<const std::byte*>(values);
  if (dtype_kind(dtype) == DTypeKind::kQuantized) {
    uint64_t block = dtype_block_values(dtype);
    return reduce_in_parallel(numel / block, std::max<uint64_t>(1, kMinElementsPerThread / block),
                              [=](uint64_t begin, uint64_t end) { return reduce_quantized(dtype, data, begin, end); });
  }
  switch (dtype) {
    case DType::F64:
      return reduce_tensor(numel, [=](size_t begin, size_t end) { return reduce_doubles(data, begin, end); });
    case DType::F32:
      return reduce_tensor(numel, [=](size_t begin, size_t end) { return reduce_floats(data, begin, end); });
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
