// ReadAhead, which stages the CUDA path's tensors: every item once and in order, no further ahead than its
// budget allows, failures in order, and a consumer that stops early is not kept waiting.
#include "precdetect/core/read_ahead.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

namespace precdetect {
namespace {

using namespace std::chrono_literals;

/// Waits up to 10 s for `produced` to reach `count`.
bool reaches(const std::atomic<size_t>& produced, size_t count) {
  for (int i = 0; i < 10'000 && produced < count; ++i) std::this_thread::sleep_for(1ms);
  return produced == count;
}

TEST(ReadAhead, GivesEveryItemOnceInOrder) {
  // Move-only items, as a CUDA upload's event is.
  ReadAhead<std::unique_ptr<size_t>> items(
      1000, 3, [](size_t) { return 1; }, [](size_t i) { return std::make_unique<size_t>(i * i); });
  for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(*items.next(), i * i);
}

TEST(ReadAhead, RunsAheadUntilTheBudgetIsSpent) {
  std::atomic<size_t> produced = 0;
  ReadAhead<size_t> items(
      100, 10, [](size_t i) { return i < 3 ? 3 : 5; },
      [&](size_t i) {
        ++produced;
        return i;
      });
  ASSERT_TRUE(reaches(produced, 3));  // 3 + 3 + 3 waiting: the fourth, at 5, would take them to 14
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(produced, 3) << "ran past its budget";
  EXPECT_EQ(items.next(), 0u);  // 3 + 3 + 5 is still 11
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(produced, 3) << "ran past its budget";
  EXPECT_EQ(items.next(), 1u);  // 3 + 5
  ASSERT_TRUE(reaches(produced, 4));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(produced, 4);
  EXPECT_EQ(items.next(), 2u);  // 5 + 5
  ASSERT_TRUE(reaches(produced, 5));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(produced, 5);
}

TEST(ReadAhead, AnItemAboveTheBudgetIsProducedWhenNoneWaits) {
  ReadAhead<size_t> items(
      5, 1, [](size_t) { return 100; }, [](size_t i) { return i; });
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(items.next(), i);
}

TEST(ReadAhead, AFailureComesAfterTheItemsBeforeItAndEndsTheSequence) {
  std::atomic<size_t> produced = 0;
  ReadAhead<size_t> items(
      10, 100, [](size_t) { return 1; },
      [&](size_t i) {
        ++produced;
        if (i == 4) throw std::runtime_error("item 4 failed");
        return i;
      });
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(items.next(), i);
  EXPECT_THROW(items.next(), std::runtime_error);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(produced, 5) << "produced items after the failure";
}

TEST(ReadAhead, LeavingEarlyStopsTheProducer) {
  std::atomic<size_t> produced = 0;
  {
    ReadAhead<size_t> items(
        1'000'000, 2, [](size_t) { return 1; },
        [&](size_t i) {
          ++produced;
          return i;
        });
    EXPECT_EQ(items.next(), 0u);
  }  // would hang here if the producer still waited for room
  EXPECT_LE(produced, 3u);
}

}  // namespace
}  // namespace precdetect
