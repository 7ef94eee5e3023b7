#pragma once
/// Threads started once per process for the parts of a parallel loop. Starting them per loop cost 0.9 ms for 15
/// threads on the 2-core VM (a launch and join each), against 2 ms to fill one 64 MiB CUDA staging buffer on
/// an H100 machine: the fill is split that way for every buffer, and a CPU tensor for every tensor.

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
  /// The process's pool: one thread per core, less the caller's.
  static WorkerPool& shared();

  explicit WorkerPool(size_t threads);
  ~WorkerPool();  ///< finishes the loops under way, then joins its threads
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Runs `task(i)` for every i in [0, count), on the pool's threads and the caller's, and returns when all are
  /// done, rethrowing the first exception a task threw. Safe from any thread, and from inside a task: the
  /// caller runs its own loop's tasks too, so a loop always finishes even when every pool thread is busy.
  void run(size_t count, const std::function<void(size_t)>& task);

 private:
  struct Loop;
  void serve();
  std::shared_ptr<Loop> next_loop(std::unique_lock<std::mutex>& lock);

  std::mutex mutex_;
  std::condition_variable work_;
  std::deque<std::shared_ptr<Loop>> loops_;  ///< loops with tasks not yet taken, oldest first
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace precdetect
