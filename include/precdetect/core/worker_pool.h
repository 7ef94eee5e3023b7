#pragma once
/// Threads started once per process for the parts of a parallel loop: starting and joining threads per loop cost
/// nearly half as much as the work it split, a CUDA staging buffer's fill (docs/benchmarks.md, "Figures behind the
/// code").

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace precdetect {

class WorkerPool {
 public:
  /// The process's pool: with the caller's, a thread per core and at least kMinConcurrency.
  static WorkerPool& shared();
  /// Parallel reads keep this many requests in flight even on a small machine: what cold disks and network
  /// filesystems need (the threads mostly wait there, so more of them than cores costs nothing).
  static constexpr size_t kMinConcurrency = 8;

  explicit WorkerPool(size_t threads);
  ~WorkerPool();  ///< finishes the loops under way, then joins its threads
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Runs `task(i)` for every i in [0, count), on the pool's threads and the caller's, and returns when all are
  /// done, rethrowing the first exception a task threw. Safe from any thread, and from inside a task: the
  /// caller runs its own loop's tasks too, so a loop always finishes even when every pool thread is busy.
  void run(size_t count, const std::function<void(size_t)>& task);

  /// Tasks of one loop that can run at once: the pool's threads and the caller.
  size_t concurrency() const { return threads_.size() + 1; }

 private:
  struct Loop;
  void serve();
  size_t take_task(const std::shared_ptr<Loop>& loop);

  std::mutex mutex_;
  std::condition_variable work_;
  std::deque<std::shared_ptr<Loop>> loops_;  ///< loops with tasks not yet taken, oldest first
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace precdetect
