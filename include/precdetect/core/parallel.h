#pragma once
/// Splitting one reduction over a large array across the machine's cores.

#include <algorithm>
#include <cstdint>
#include <future>
#include <thread>
#include <vector>

namespace precdetect {

/// Runs `range(begin, end)` on parts of [0, numel) in parallel and merges the parts' results (`Result::merge`).
/// Arrays below `min_per_thread` elements per core run inline: a thread costs more than it saves there.
template <typename Range>
auto reduce_in_parallel(uint64_t numel, uint64_t min_per_thread, Range range) {
  uint64_t threads = std::min<uint64_t>(std::max(1u, std::thread::hardware_concurrency()), numel / min_per_thread);
  if (threads <= 1) return range(0, numel);
  uint64_t part = (numel + threads - 1) / threads;
  std::vector<std::future<decltype(range(0, numel))>> parts;
  for (uint64_t begin = part; begin < numel; begin += part)
    parts.push_back(std::async(std::launch::async, range, begin, std::min(numel, begin + part)));
  auto result = range(0, std::min(numel, part));
  for (auto& other : parts) result.merge(other.get());
  return result;
}

/// Runs `part(begin, end)` on up to `max_parts` parts of [0, total) at once, none smaller than `min_part`
/// (the last may be), and returns when all are done. Exceptions from any part reach the caller.
template <typename Part>
void for_parts_in_parallel(uint64_t total, uint64_t min_part, uint64_t max_parts, Part part) {
  uint64_t parts = std::clamp<uint64_t>(total / std::max<uint64_t>(min_part, 1), 1, std::max<uint64_t>(max_parts, 1));
  uint64_t size = (total + parts - 1) / parts;
  std::vector<std::future<void>> others;
  for (uint64_t begin = size; begin < total; begin += size)
    others.push_back(std::async(std::launch::async, part, begin, std::min(total, begin + size)));
  part(0, std::min(total, size));
  for (auto& other : others) other.get();
}

}  // namespace precdetect
