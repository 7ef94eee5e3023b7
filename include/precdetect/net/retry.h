#pragma once
/// When a request is tried again, and after how long: the transient failures (a refused or reset connection, a
/// stall, a deadline passed, 429 and 5xx), kAttempts tries in all, waiting as the server's Retry-After says (RFC 9110
/// §10.2.3: delay-seconds or an HTTP-date) up to kMaxRetryAfter, else 0.5 s doubled.

#include <chrono>
#include <optional>
#include <string_view>

namespace precdetect {

inline constexpr int kAttempts = 3;  ///< tries of one request in all: a transient failure is tried twice more
inline constexpr std::chrono::seconds kMaxRetryAfter{60};  ///< a longer Retry-After is waited this long

/// True for an HTTP status worth trying again: 429, 500, 502, 503, 504.
bool retryable_status(long status);

/// How long to wait after try `attempt` (1 for the first) failed: `retry_after` (the answer's Retry-After, when it
/// had one) as seconds, or as an HTTP-date counted from `now` (a date past is no wait), at most kMaxRetryAfter;
/// without one, or one that is neither, 0.5 s x 2^(attempt - 1).
std::chrono::milliseconds retry_delay(int attempt, std::optional<std::string_view> retry_after,
                                      std::chrono::system_clock::time_point now);

}  // namespace precdetect
