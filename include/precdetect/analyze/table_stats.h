#pragma once
/// The statistics of values decoded through a lookup table per row: the shape every integer-quantized weight takes
/// (GPTQ, AWQ, compressed-tensors, bitsandbytes), whose codes each stand for one of a few values per row or block.
/// Each row's table is filled once, each code looked up, and the values go through the F32 kernel a chunk at a time,
/// rows shared among the cores.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "precdetect/analyze/cpu_kernel.h"
#include "precdetect/analyze/tensor_stats.h"
#include "precdetect/core/parallel.h"

namespace precdetect {

/// `count` values laid out as `rows` of `columns` (the last row may be short): `fill_table(row, table)` writes row
/// `row`'s `table_size` values, `index(row, column)` is the table index of a value.
template <typename FillTable, typename Index>
TensorStats table_stats(int64_t rows, int64_t columns, uint64_t count, size_t table_size, FillTable fill_table,
                        Index index) {
  constexpr uint64_t kChunkValues = uint64_t{1} << 20;  // values decoded at a time
  auto range = [&](uint64_t first, uint64_t last) {
    std::vector<float> table(table_size), values;
    values.reserve(std::max<uint64_t>(static_cast<uint64_t>(columns), kChunkValues));
    TensorStats stats;
    for (auto row = static_cast<int64_t>(first); row < static_cast<int64_t>(last); ++row) {
      fill_table(row, table);
      int64_t length = std::min<int64_t>(columns, static_cast<int64_t>(count) - row * columns);
      for (int64_t column = 0; column < length; ++column) values.push_back(table[index(row, column)]);
      if (values.size() >= kChunkValues || row + 1 == static_cast<int64_t>(last)) {
        stats.merge(cpu_tensor_stats(values.data(), DType::F32, values.size()));
        values.clear();
      }
    }
    return stats;
  };
  uint64_t per_part = std::max<uint64_t>(1, kChunkValues / static_cast<uint64_t>(std::max<int64_t>(columns, 1)));
  TensorStats total = reduce_in_parallel(static_cast<uint64_t>(rows), per_part, range);
  total.exactness_checked = total.bf16_exact = total.fp16_exact = 0;  // a dequantized value is no stored value
  return total;
}

}  // namespace precdetect
