// The process's worker pool and the parallel loops built on it: every part runs once, results merge in order,
// failures reach the caller, and loops from many threads or from inside a task all finish.
#include "precdetect/core/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "precdetect/core/parallel.h"

namespace precdetect {
namespace {

TEST(WorkerPool, RunsEveryTaskOnceFromManyCallersAtOnce) {
  WorkerPool pool(3);
  std::vector<std::atomic<int>> runs(4 * 1000);
  std::vector<std::thread> callers;
  for (size_t caller = 0; caller < 4; ++caller)
    callers.emplace_back([&, caller] {
      for (size_t loop = 0; loop < 100; ++loop) pool.run(10, [&](size_t i) { ++runs[caller * 1000 + loop * 10 + i]; });
    });
  for (std::thread& caller : callers) caller.join();
  for (size_t i = 0; i < runs.size(); ++i) ASSERT_EQ(runs[i].load(), 1) << "task " << i;
}

TEST(WorkerPool, TheFirstFailureReachesTheCallerAfterEveryTaskRan) {
  WorkerPool pool(2);
  std::atomic<int> ran = 0;
  auto failing = [&](size_t i) {
    ++ran;
    if (i % 3 == 1) throw std::runtime_error("task failed");
  };
  EXPECT_THROW(pool.run(9, failing), std::runtime_error);
  EXPECT_EQ(ran.load(), 9);
  ran = 0;
  pool.run(5, [&](size_t) { ++ran; });  // the pool still works
  EXPECT_EQ(ran.load(), 5);
}

TEST(WorkerPool, ALoopInsideATaskFinishesWhenEveryThreadIsBusy) {
  WorkerPool pool(1);
  std::atomic<int> inner = 0;
  pool.run(4, [&](size_t) { pool.run(4, [&](size_t) { ++inner; }); });
  EXPECT_EQ(inner.load(), 16);
}

/// Parallel reads rely on it: kMinConcurrency tasks of one loop run at once, however few cores the machine has.
TEST(WorkerPool, TheSharedPoolRunsEightTasksAtOnceOnAnyMachine) {
  WorkerPool& pool = WorkerPool::shared();
  ASSERT_GE(pool.concurrency(), WorkerPool::kMinConcurrency);
  std::mutex mutex;
  std::condition_variable all_in;
  size_t arrived = 0, saw_all = 0;
  pool.run(WorkerPool::kMinConcurrency, [&](size_t) {
    std::unique_lock lock(mutex);
    if (++arrived == WorkerPool::kMinConcurrency) all_in.notify_all();
    // Each task waits for all the others: with fewer running at once they time out instead.
    saw_all += all_in.wait_for(lock, std::chrono::seconds(20), [&] { return arrived == WorkerPool::kMinConcurrency; });
  });
  EXPECT_EQ(saw_all, WorkerPool::kMinConcurrency);
}

/// The [begin, end) ranges a reduction saw, in merge order.
struct Ranges {
  std::vector<std::pair<uint64_t, uint64_t>> seen;
  void merge(const Ranges& other) { seen.insert(seen.end(), other.seen.begin(), other.seen.end()); }
};

TEST(Parallel, ReductionPartsCoverTheArrayAndMergeInOrder) {
  for (uint64_t numel : {1ull, 999ull, 1000ull, 12345ull, 1ull << 20}) {
    Ranges merged = reduce_in_parallel(numel, 100, [](uint64_t begin, uint64_t end) { return Ranges{{{begin, end}}}; });
    ASSERT_FALSE(merged.seen.empty());
    EXPECT_EQ(merged.seen.front().first, 0u);
    EXPECT_EQ(merged.seen.back().second, numel);
    for (size_t i = 1; i < merged.seen.size(); ++i) EXPECT_EQ(merged.seen[i].first, merged.seen[i - 1].second);
  }
}

TEST(Parallel, PartsCoverTheRangeOnceAndAnEmptyRangeIsOnePart) {
  std::vector<std::atomic<int>> covered(10'000);
  for_parts_in_parallel(covered.size(), 64, 7, [&](uint64_t begin, uint64_t end) {
    EXPECT_TRUE(end - begin >= 64 || end == covered.size());
    for (uint64_t i = begin; i < end; ++i) ++covered[i];
  });
  for (size_t i = 0; i < covered.size(); ++i) ASSERT_EQ(covered[i].load(), 1) << "element " << i;
  int calls = 0;
  for_parts_in_parallel(0, 64, 7, [&](uint64_t begin, uint64_t end) { calls += begin == 0 && end == 0; });
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace precdetect
