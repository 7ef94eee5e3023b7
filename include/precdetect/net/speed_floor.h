#pragma once
/// The low-speed floor a transfer must keep (docs/using.md's limits): at least `limit` bytes per second on average
/// over the last `interval`, as libcurl's CURLOPT_LOW_SPEED_LIMIT/TIME say it, measured from the bytes as they
/// arrive. libcurl's own check is against its current speed, an average over the last 5 seconds, so a stall after
/// data went unnoticed for up to 5 s more than the interval (6 s late by the measure).

#include <chrono>
#include <cstdint>
#include <deque>

namespace precdetect {

class SpeedFloor {
 public:
  using Clock = std::chrono::steady_clock;

  /// A transfer that starts at `start`, to keep `limit` bytes per second over `interval`.
  SpeedFloor(uint64_t limit, std::chrono::seconds interval, Clock::time_point start);

  /// Bytes arrived: `received` in all, at `now` (a sample every 100 ms at most, the last one's count kept current,
  /// so that a stall is timed from the last bytes).
  void record(Clock::time_point now, uint64_t received);
  /// False once fewer than limit x interval bytes arrived in the last interval (never in the first one). Asked at
  /// least once a second (libcurl's progress callback), it notices a stall within a second of the interval.
  bool kept(Clock::time_point now, uint64_t received);

 private:
  struct Sample {
    Clock::time_point at;
    uint64_t received;
  };
  static constexpr std::chrono::milliseconds kSampleEvery{100};  // the window's resolution; few samples kept
  Clock::duration interval_;
  uint64_t floor_;  ///< bytes an interval must bring
  Clock::time_point start_;
  std::deque<Sample> samples_;
};

}  // namespace precdetect
