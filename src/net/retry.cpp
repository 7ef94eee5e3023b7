#include "precdetect/net/retry.h"

#include <curl/curl.h>

#include <algorithm>
#include <string>

#include "precdetect/core/whole_number.h"

namespace precdetect {

bool retryable_status(long status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

std::chrono::milliseconds retry_delay(int attempt, std::optional<std::string_view> retry_after,
                                      std::chrono::system_clock::time_point now) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  if (retry_after) {
    std::optional<long long> delay = whole_number<long long>(*retry_after);
    bool is_seconds = delay && *delay >= 0;
    // Otherwise an HTTP-date (IMF-fixdate, or the obsolete RFC 850 and asctime forms), which libcurl's parser
    // reads as its own Date and cookie dates.
    std::time_t date = is_seconds ? -1 : curl_getdate(std::string(*retry_after).c_str(), nullptr);
    if (is_seconds) return seconds(std::min<long long>(*delay, kMaxRetryAfter.count()));
    if (date != -1) {  // to the millisecond: a date is a whole second, now is not
      auto wait = std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::from_time_t(date) - now);
      return std::clamp(wait, milliseconds(0), milliseconds(kMaxRetryAfter));
    }
  }
  return milliseconds(500) * (1 << std::clamp(attempt - 1, 0, 16));
}

}  // namespace precdetect
