#include "precdetect/net/speed_floor.h"

namespace precdetect {

SpeedFloor::SpeedFloor(uint64_t limit, std::chrono::seconds interval, Clock::time_point start)
    : interval_(interval), floor_(limit * static_cast<uint64_t>(interval.count())), start_(start) {
  samples_.push_back({start, 0});
}

void SpeedFloor::record(Clock::time_point now, uint64_t received) {
  if (now - samples_.back().at >= kSampleEvery)
    samples_.push_back({now, received});
  else if (samples_.size() > 1)
    samples_.back().received = received;  // at most 100 ms later than the sample says: a stall is seen that early
}

bool SpeedFloor::kept(Clock::time_point now, uint64_t received) {
  record(now, received);
  // The newest sample at least an interval old is where the window starts; those before it are not needed again.
  while (samples_.size() > 1 && now - samples_[1].at >= interval_) samples_.pop_front();
  return now - start_ < interval_ || received - samples_.front().received >= floor_;
}

}  // namespace precdetect
