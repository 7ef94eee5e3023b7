#pragma once
/// Splitting one reduction over a large array across the machine's cores (on the process's WorkerPool).

#include <algorithm>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "precdetect/core/worker_pool.h"

namespace precdetect {

/// Runs `range(begin, end)` on parts of [0, numel) in parallel and merges the parts' results (`Result::merge`),
/// in order. Arrays below `min_per_thread` elements per core run inline: splitting costs more than it saves.
template <typename Range>
auto reduce_in_parallel(uint64_t numel, uint64_t min_per_thread, Range range) {
  static const uint64_t kCores = std::max(1u, std::thread::hardware_concurrency());  // a system call: asked once
  uint64_t parts = std::min<uint64_t>(kCores, numel / min_per_thread);
  if (parts <= 1) return range(0, numel);
  uint64_t part = (numel + parts - 1) / parts;
  std::vector<std::optional<decltype(range(0, numel))>> results((numel + part - 1) / part);
  WorkerPool::shared().run(results.size(),
                           [&](size_t i) { results[i].emplace(range(i * part, std::min(numel, (i + 1) * part))); });
  auto result = std::move(*results[0]);
  for (size_t i = 1; i < results.size(); ++i) result.merge(*results[i]);
  return result;
}

/// Runs `part(begin, end)` on up to `max_parts` parts of [0, total) at once, none smaller than `min_part`
/// (the last may be), and returns when all are done. Exceptions from any part reach the caller.
template <typename Part>
void for_parts_in_parallel(uint64_t total, uint64_t min_part, uint64_t max_parts, Part part) {
  uint64_t parts = std::clamp<uint64_t>(total / std::max<uint64_t>(min_part, 1), 1, std::max<uint64_t>(max_parts, 1));
  uint64_t size = std::max<uint64_t>((total + parts - 1) / parts, 1);
  WorkerPool::shared().run(std::max<uint64_t>((total + size - 1) / size, 1), [&](size_t i) {  // (0, 0) if empty
    part(i * size, std::min(total, (i + 1) * size));
  });
}

}  // namespace precdetect
