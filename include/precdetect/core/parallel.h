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

}  // namespace precdetect
