// When a remote request is tried again, and after how long (net/retry.h): Retry-After in both of RFC 9110's forms,
// capped, else the doubling backoff.
#include "precdetect/net/retry.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

namespace precdetect {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// 2026-01-01T00:00:00Z, the "now" the dates below are counted from.
const auto kNow = std::chrono::system_clock::from_time_t(1767225600);

TEST(Retry, BacksOffHalfASecondDoubledWithoutRetryAfter) {
  EXPECT_EQ(retry_delay(1, std::nullopt, kNow), milliseconds(500));
  EXPECT_EQ(retry_delay(2, std::nullopt, kNow), milliseconds(1000));
  EXPECT_EQ(retry_delay(3, std::nullopt, kNow), milliseconds(2000));
}

TEST(Retry, RetryAfterInSecondsIsWaitedUpToTheCap) {
  EXPECT_EQ(retry_delay(1, "3", kNow), seconds(3));
  EXPECT_EQ(retry_delay(2, "0", kNow), seconds(0));
  EXPECT_EQ(retry_delay(1, "100000", kNow), kMaxRetryAfter);
}

TEST(Retry, RetryAfterAsAnHttpDateIsCountedFromNow) {
  EXPECT_EQ(retry_delay(1, "Thu, 01 Jan 2026 00:00:03 GMT", kNow), seconds(3));      // IMF-fixdate
  EXPECT_EQ(retry_delay(1, "Thursday, 01-Jan-26 00:00:05 GMT", kNow), seconds(5));   // RFC 850
  EXPECT_EQ(retry_delay(1, "Thu Jan  1 00:00:07 2026", kNow), seconds(7));           // asctime
  EXPECT_EQ(retry_delay(1, "Wed, 31 Dec 2025 23:00:00 GMT", kNow), seconds(0));      // past: no wait
  EXPECT_EQ(retry_delay(1, "Fri, 02 Jan 2026 00:00:00 GMT", kNow), kMaxRetryAfter);  // a day ahead: capped
  // Counted to the millisecond: a date is a whole second, now is not.
  EXPECT_EQ(retry_delay(1, "Thu, 01 Jan 2026 00:00:03 GMT", kNow + milliseconds(700)), milliseconds(2300));
}

TEST(Retry, ARetryAfterOfNeitherFormIsTheBackoff) {
  for (const char* value : {"", "soon", "-5", "1.5", "3 seconds"})
    EXPECT_EQ(retry_delay(2, value, kNow), milliseconds(1000)) << value;
}

TEST(Retry, OnlyTransientStatusesAreRetried) {
  for (long status : {429, 500, 502, 503, 504}) EXPECT_TRUE(retryable_status(status)) << status;
  for (long status : {200, 206, 301, 400, 401, 403, 404, 410, 416, 501})
    EXPECT_FALSE(retryable_status(status)) << status;
}

}  // namespace
}  // namespace precdetect
