#pragma once
/// A sequence's items produced in order on a thread of their own, ahead of the consumer within a budget. The
/// CUDA path stages tensors this way: the host fills staging buffers without waiting for the GPU's results, and
/// after a large tensor the small ones behind it (norms, biases) are already staged.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>

namespace precdetect {

template <typename T>
class ReadAhead {
 public:
  /// Produces `produce(0)` .. `produce(count - 1)` on a new thread. It runs ahead of next() while the items
  /// produced and not yet taken cost at most `budget` together (item i costs `cost(i)`), and by one item, whatever
  /// its cost, when none is waiting. Nothing is produced after a `produce` that throws.
  ReadAhead(size_t count, uint64_t budget, std::function<uint64_t(size_t)> cost, std::function<T(size_t)> produce)
      : count_(count),
        budget_(budget),
        cost_(std::move(cost)),
        produce_(std::move(produce)),
        thread_([this](std::stop_token stop) { produce_all(stop); }) {}
  /// Stops after the item being produced (dropping it) and joins the thread: `thread_`, the last member, goes first.
  ~ReadAhead() = default;
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  /// The next item, in order, once produced; rethrows what producing it threw. At most `count` calls.
  T next() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !ready_.empty() || failure_; });
    if (ready_.empty()) std::rethrow_exception(failure_);
    Item item = std::move(ready_.front());
    ready_.pop_front();
    queued_cost_ -= item.cost;
    changed_.notify_all();
    return std::move(item.value);
  }

 private:
  struct Item {
    T value;
    uint64_t cost;
  };

  void produce_all(const std::stop_token& stop) {
    for (size_t i = 0; i < count_; ++i) {
      uint64_t cost = cost_(i);
      std::unique_lock lock(mutex_);
      if (!changed_.wait(lock, stop, [&] { return ready_.empty() || queued_cost_ + cost <= budget_; })) return;
      lock.unlock();
      std::optional<T> value;
      std::exception_ptr thrown;
      try {
        value.emplace(produce_(i));
      } catch (...) {
        thrown = std::current_exception();
      }
      lock.lock();
      if (thrown) {
        failure_ = thrown;
        changed_.notify_all();
        return;
      }
      ready_.push_back({std::move(*value), cost});
      queued_cost_ += cost;
      changed_.notify_all();
    }
  }

  const size_t count_;
  const uint64_t budget_;
  const std::function<uint64_t(size_t)> cost_;
  const std::function<T(size_t)> produce_;
  std::mutex mutex_;
  std::condition_variable_any changed_;  ///< an item produced or taken, or a failure
  std::deque<Item> ready_;               ///< produced, not yet taken
  uint64_t queued_cost_ = 0;             ///< of `ready_`
  std::exception_ptr failure_;
  std::jthread thread_;
};

}  // namespace precdetect
