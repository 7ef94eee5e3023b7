// The low-speed floor of a remote transfer (net/speed_floor.h), with the clock given: a stall is noticed an
// interval after the last bytes came, however much came before them; a drip under the floor is a stall; one above
// it is not.
#include "precdetect/net/speed_floor.h"

#include <gtest/gtest.h>

namespace precdetect {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
const SpeedFloor::Clock::time_point kStart{};

TEST(SpeedFloor, TheFirstIntervalIsNeverAStall) {
  SpeedFloor floor(1024, seconds(10), kStart);
  for (int s = 0; s < 10; ++s) EXPECT_TRUE(floor.kept(kStart + seconds(s), 0)) << s;
  EXPECT_FALSE(floor.kept(kStart + seconds(10), 0));  // nothing in the first 10 s
}

TEST(SpeedFloor, AStallAfterDataIsNoticedAnIntervalAfterTheLastBytes) {
  // 100 MB in the first 3 s, then nothing: libcurl's 5-second average kept this above its limit until 8 s.
  SpeedFloor floor(1024, seconds(10), kStart);
  for (int ms = 0; ms <= 3000; ms += 100) EXPECT_TRUE(floor.kept(kStart + milliseconds(ms), ms * 33'333ULL));
  uint64_t received = 3000 * 33'333ULL;
  for (int s = 4; s < 13; ++s) EXPECT_TRUE(floor.kept(kStart + seconds(s), received)) << s;
  EXPECT_TRUE(floor.kept(kStart + milliseconds(12'900), received));
  EXPECT_FALSE(floor.kept(kStart + milliseconds(13'100), received));  // 10 s (and one sample) after the last bytes
}

TEST(SpeedFloor, ADripUnderTheFloorIsAStallAndOneAboveItIsNot) {
  // 16 bytes every half second (issue 69's drip) against 1 KiB/s over 1 s; 2 KiB every half second against it.
  SpeedFloor under(1024, seconds(1), kStart), above(1024, seconds(1), kStart);
  bool under_kept = true;
  for (int tick = 1; tick <= 20; ++tick) {
    auto now = kStart + milliseconds(500 * tick);
    under_kept = under_kept && under.kept(now, 16ULL * tick);
    EXPECT_TRUE(above.kept(now, 2048ULL * tick)) << tick;
  }
  EXPECT_FALSE(under_kept);
}

}  // namespace
}  // namespace precdetect
