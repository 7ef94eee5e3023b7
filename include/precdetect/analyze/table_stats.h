#pragma once
/// The statistics of values decoded through a lookup table per row: the shape every integer-quantized weight takes
/// (GPTQ, AWQ, compressed-tensors, bitsandbytes), whose codes each stand for one of a few values per row or block.
/// Each row's table is filled once, each code looked up, and the values go through the F32 kernel a chunk at a time,
/// rows shared among the cores.

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "precdetect/analyze/cpu_kernel.h"
#include "precdetect/analyze/narrow_rounding.h"
#include "precdetect/analyze/tensor_stats.h"
#include "precdetect/core/parallel.h"

namespace precdetect {

/// `count` values laid out as `rows` of `columns` (the last row may be short): `fill_table(row, table)` writes row
/// `row`'s `table_size` values, `decode_row(row, table, out, length)` writes the row's first `length` values to
/// `out`, each one of its table's. The tables hold the values as the kernel of `kResult` reads them (NarrowValue): a
/// result in float16 or bfloat16 costs the kernel what its float twin costs.
template <DType kResult, typename FillTable, typename DecodeRow>
TensorStats table_stats(int64_t rows, int64_t columns, uint64_t count, size_t table_size, FillTable fill_table,
                        DecodeRow decode_row) {
  using Value = NarrowValue<kResult>;
  constexpr DType kKernel = std::is_same_v<Value, float> ? DType::F32 : kResult;
  constexpr uint64_t kChunkValues = uint64_t{1} << 20;  // values decoded at a time
  auto range = [&](uint64_t first, uint64_t last) {
    std::vector<Value> table(table_size), values(std::max<uint64_t>(static_cast<uint64_t>(columns), kChunkValues));
    TensorStats stats;
    size_t filled = 0;
    for (auto row = static_cast<int64_t>(first); row < static_cast<int64_t>(last); ++row) {
      fill_table(row, table);
      int64_t length = std::min<int64_t>(columns, static_cast<int64_t>(count) - row * columns);
      if (filled + static_cast<size_t>(length) > values.size()) {
        stats.merge(cpu_tensor_stats(values.data(), kKernel, filled));
        filled = 0;
      }
      decode_row(row, table, values.data() + filled, length);
      filled += static_cast<size_t>(length);
    }
    if (filled > 0) stats.merge(cpu_tensor_stats(values.data(), kKernel, filled));
    return stats;
  };
  uint64_t per_part = std::max<uint64_t>(1, kChunkValues / static_cast<uint64_t>(std::max<int64_t>(columns, 1)));
  TensorStats total = reduce_in_parallel(static_cast<uint64_t>(rows), per_part, range);
  total.exactness_checked = total.bf16_exact = total.fp16_exact = 0;  // a dequantized value is no stored value
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
