#include "precdetect/core/worker_pool.h"

#include <algorithm>
#include <exception>

namespace precdetect {

/// One run(): its tasks are taken by index, by the pool's threads and the caller alike.
struct WorkerPool::Loop {
  Loop(const std::function<void(size_t)>& task, size_t count) : task(task), count(count) {}

  const std::function<void(size_t)>& task;
  size_t count;
  size_t taken = 0;  ///< under the pool's mutex
  size_t done = 0;   ///< under the pool's mutex
  std::exception_ptr failure;
  std::condition_variable finished;

  /// Runs task `i`, then counts it done; the first exception is kept for the caller.
  void run_one(size_t i, std::mutex& mutex) {
    std::exception_ptr thrown;
    try {
      task(i);
    } catch (...) {
      thrown = std::current_exception();
    }
    std::lock_guard lock(mutex);
    if (thrown && !failure) failure = thrown;
    if (++done == count) finished.notify_all();
  }
};

WorkerPool& WorkerPool::shared() {
  static WorkerPool pool(std::max<size_t>(std::thread::hardware_concurrency(), kMinConcurrency) - 1);
  return pool;
}

WorkerPool::WorkerPool(size_t threads) {
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { serve(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

/// Takes `loop`'s next task, under the mutex; the loop leaves the queue with its last one.
size_t WorkerPool::take_task(const std::shared_ptr<Loop>& loop) {
  size_t i = loop->taken++;
  if (loop->taken == loop->count) std::erase(loops_, loop);
  return i;
}

void WorkerPool::serve() {
  std::unique_lock lock(mutex_);
  while (true) {
    work_.wait(lock, [this] { return stopping_ || !loops_.empty(); });
    if (loops_.empty()) return;  // stopping, and every loop's tasks taken
    std::shared_ptr<Loop> loop = loops_.front();
    size_t i = take_task(loop);
    lock.unlock();
    loop->run_one(i, mutex_);
    lock.lock();
  }
}

void WorkerPool::run(size_t count, const std::function<void(size_t)>& task) {
  if (count == 0) return;
  auto loop = std::make_shared<Loop>(task, count);
  std::unique_lock lock(mutex_);
  if (count > 1) {
    loops_.push_back(loop);
    work_.notify_all();
  }
  // The caller takes tasks of its own loop until none is left, then waits for those the pool's threads took.
  while (loop->taken < count) {
    size_t i = take_task(loop);
    lock.unlock();
    loop->run_one(i, mutex_);
    lock.lock();
  }
  loop->finished.wait(lock, [&] { return loop->done == count; });
  if (loop->failure) std::rethrow_exception(loop->failure);
}

}  // namespace precdetect
