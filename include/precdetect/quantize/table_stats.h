#pragma once
/// The statistics of values decoded through lookup tables: the shape every integer-quantized weight takes (GPTQ,
/// AWQ, compressed-tensors, bitsandbytes), whose codes each stand for one of a few values per row, group or block.
/// The work comes in units (a block, a band of rows): each unit's tables are filled once, each of its codes looked
/// up, and the value goes straight to DecodedValues; units are shared among the cores.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "precdetect/core/parallel.h"
#include "precdetect/kernel/cpu_kernel.h"
#include "precdetect/kernel/scalar_stats.h"
#include "precdetect/kernel/tensor_stats.h"
#include "precdetect/quantize/narrow_rounding.h"

namespace precdetect {

/// Where decoded values go, `reserve(n)` announcing the next n before they are `add`ed. A float16 or bfloat16 result
/// is counted by magnitude code into two tables (`lane` picks one, so that neighbouring equal codes do not wait on
/// each other's increments), exactly as the kernel counts the float twin; a float32 result is gathered and run
/// through the F32 kernel a chunk at a time.
template <DType kResult, bool kCounted = !std::is_same_v<NarrowValue<kResult>, float>>
class DecodedValues;

template <DType kResult>
class DecodedValues<kResult, true> {
 public:
  static constexpr uint64_t kCodes = uint64_t{1} << 15;  // all but the sign bit
  void reserve(uint64_t /*count*/) {}                    // 64-bit counts: any number of values
  /// `magnitude`: a table's entry (narrow_magnitudes), below 2^15. A sum, not an or: a constant lane then folds
  /// into the address.
  void add(uint16_t magnitude, unsigned lane) { ++counts_[magnitude + (lane & 1) * kCodes]; }
  /// `count` values of one magnitude code at once (CodeTally's).
  void add_many(uint16_t magnitude, uint64_t count) { counts_[magnitude] += count; }
  TensorStats stats() {
    for (uint64_t code = 0; code < kCodes; ++code) counts_[code] += counts_[kCodes + code];
    return stats_from_code_counts(kResult, counts_.data());
  }

 private:
  std::vector<uint64_t> counts_ = std::vector<uint64_t>(2 * kCodes);
};

template <DType kResult>
class DecodedValues<kResult, false> {
 public:
  void reserve(uint64_t count) {
    if (filled_ + count > values_.size()) flush();
    if (count > values_.size()) values_.resize(count);
  }
  void add(float value, unsigned /*lane*/) { values_[filled_++] = value; }
  void add_many(float value, uint64_t count) { add_magnitude(stats_, std::fabs(static_cast<double>(value)), count); }
  TensorStats stats() {
    flush();
    return stats_;
  }

 private:
  static constexpr uint64_t kChunkValues = uint64_t{1} << 16;  // gathered at a time: they stay in the cache
  void flush() {
    if (filled_ > 0) stats_.merge(cpu_tensor_stats(values_.data(), DType::F32, filled_));
    filled_ = 0;
  }
  std::vector<float> values_ = std::vector<float>(kChunkValues);
  uint64_t filled_ = 0;
  TensorStats stats_;
};

/// A unit's codes counted per table entry before they reach DecodedValues, which then takes each entry once with its
/// count: where a unit holds many more codes than its table has entries (quanto's qint8, a table of 256 per row of
/// thousands), the increments stay in the L1 cache rather than in DecodedValues' 512 KiB of counts.
template <size_t kEntries>
class CodeTally {
 public:
  void add(uint32_t entry, unsigned lane) { ++tally_[entry + (lane & 1) * kEntries]; }
  /// Adds the tally through `table` (kEntries values) to `values`, and empties it.
  template <typename Value, typename Decoded>
  void flush(const Value* table, Decoded& values) {
    for (size_t entry = 0; entry < kEntries; ++entry) {
      const uint64_t count = tally_[entry] + tally_[kEntries + entry];
      if (count > 0) values.add_many(table[entry], count);
    }
    tally_.fill(0);
  }

 private:
  std::array<uint64_t, 2 * kEntries> tally_{};
};

/// `units` units of about `unit_values` values each: `fill_tables(unit, tables)` writes the unit's `table_size`
/// table values, as narrow_magnitudes writes them (a float32 table may keep signs: the F32 kernel drops them);
/// `decode(unit, tables, values)` adds each of the unit's values to `values` (a DecodedValues<kResult>&). Exactness
/// counts are left at 0: a dequantized value is no stored value.
template <DType kResult, typename FillTables, typename Decode>
TensorStats table_stats(uint64_t units, uint64_t unit_values, size_t table_size, FillTables fill_tables,
                        Decode decode) {
  constexpr uint64_t kPartValues = uint64_t{1} << 20;  // values a core takes at least
  auto range = [&](uint64_t first, uint64_t last) {
    std::vector<NarrowValue<kResult>> tables(table_size);
    DecodedValues<kResult> values;
    for (uint64_t unit = first; unit < last; ++unit) {
      fill_tables(unit, tables);
      decode(unit, tables, values);
    }
    return values.stats();
  };
  TensorStats total =
      reduce_in_parallel(units, std::max<uint64_t>(1, kPartValues / std::max<uint64_t>(unit_values, 1)), range);
  total.exactness_checked = total.bf16_exact = total.fp16_exact = 0;
  return total;
}

/// `body.template operator()<kResult>()` for `dtype` as a compile-time result dtype: F16, BF16, else F32.
template <typename Body>
auto for_result_dtype(DType dtype, Body body) {
  switch (dtype) {
    case DType::F16:
      return body.template operator()<DType::F16>();
    case DType::BF16:
      return body.template operator()<DType::BF16>();
    default:
      return body.template operator()<DType::F32>();
  }
}

}  // namespace precdetect
