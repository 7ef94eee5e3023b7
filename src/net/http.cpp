#include "precdetect/net/http.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "precdetect/core/error.h"
#include "precdetect/core/whole_number.h"
#include "precdetect/net/retry.h"
#include "precdetect/net/speed_floor.h"

namespace precdetect {
namespace {

using Clock = SpeedFloor::Clock;

thread_local TransferMeter* t_meter = nullptr;

constexpr int kMaxRedirects = 5;        // as huggingface_hub's requests session
constexpr size_t kErrorBodyKept = 512;  // of an error answer's body, for its message
constexpr std::string_view kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// One easy handle per thread: connections (and TLS sessions) are kept between the requests a thread makes.
class Handle {
 public:
  Handle() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    curl_ = curl_easy_init();
    if (!curl_) throw Error(ErrorCode::kRemote, "libcurl could not start a transfer");
  }
  ~Handle() { curl_easy_cleanup(curl_); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  CURL* get() const { return curl_; }

 private:
  CURL* curl_;
};

CURL* thread_handle() {
  thread_local Handle handle;
  curl_easy_reset(handle.get());
  return handle.get();
}

/// "bytes F-L/T" (or "bytes */T" with a 416): the range and total a ranged answer claims.
struct ContentRange {
  uint64_t first = 0, last = 0, total = 0;
  bool unsatisfied = false;
};

/// Takes `literal` off the front of `text`, when it is there.
bool take(std::string_view& text, std::string_view literal) {
  if (!text.starts_with(literal)) return false;
  text.remove_prefix(literal.size());
  return true;
}

/// Takes a byte position off the front of `text`: digits only, as RFC 9110 writes one (no sign, no space), and no
/// more than 64 bits hold (a server's `-1` or `99999999999999999999` is no size).
bool take_position(std::string_view& text, uint64_t& value) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc()) return false;
  text.remove_prefix(static_cast<size_t>(end - text.data()));
  return true;
}

std::optional<ContentRange> parse_content_range(std::string_view value) {
  ContentRange range;
  if (!take(value, "bytes ")) return std::nullopt;
  if (take(value, "*/")) {
    range.unsatisfied = true;
    return take_position(value, range.total) && value.empty() ? std::optional(range) : std::nullopt;
  }
  bool whole = take_position(value, range.first) && take(value, "-") && take_position(value, range.last) &&
               take(value, "/") && take_position(value, range.total) && value.empty();
  if (!whole || range.first > range.last || range.last >= range.total) return std::nullopt;
  return range;
}

bool is_redirect(long status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

/// One request's state, shared with libcurl's callbacks.
struct Transfer {
  const HttpRequest& request;
  const TransferLimits& limits;
  std::string url;
  std::span<std::byte> into;
  long status = 0;
  std::map<std::string, std::string> headers;
  bool checked = false;                           // the headers were judged (on the first body byte, or at the end)
  std::optional<Error> failure;                   // why the transfer was stopped: never retried
  bool stalled = false;                           // stopped below the low-speed floor: tried again
  uint64_t limit = 0, received = 0, arrived = 0;  // the body's exact length; bytes taken; bytes of any body
  FileVersion version;
  std::string body;
  std::atomic<uint64_t>* meter = request.meter ? request.meter : TransferMeter::current();
  SpeedFloor floor{limits.low_speed_limit, std::chrono::seconds(limits.interval_seconds), Clock::now()};

  [[noreturn]] void refuse(ErrorCode code, const std::string& why) {
    throw Error(code, fmt::format("{}: {}", url, why));
  }

  /// A 2xx answer's headers against the request: the range rules and the file's version. Sets `limit`, the body's
  /// exact length.
  void check_headers() {
    checked = true;
    if (status < 200 || status >= 300) return;
    std::string encoding = headers.contains("content-encoding") ? headers["content-encoding"] : "";
    if (!encoding.empty() && encoding != "identity")
      refuse(ErrorCode::kRangeNotHonoured,
             fmt::format("the body is compressed ({}); bytes must arrive as stored", encoding));
    take_final_validators(version, headers);
    take_hub_validators(version, headers);  // a mirror that answers without redirecting names them here
    if (!request.range) {
      limit = request.max_body;
      return;
    }
    if (status != 206)
      refuse(ErrorCode::kRangeNotHonoured,
             fmt::format("answered {} to a request for bytes {}-{}: the server does not honour ranges", status,
                         request.range->first, request.range->last));
    check_content_range();
    if (request.version) check_same_version(*request.version, version, request.follow_redirects, url);
  }

  void check_content_range() {
    const HttpRange& asked = *request.range;
    std::string value = headers.contains("content-range") ? headers["content-range"] : "";
    std::optional<ContentRange> got = parse_content_range(value);
    if (!got || got->unsatisfied)
      refuse(ErrorCode::kRangeNotHonoured,
             fmt::format("asked for bytes {}-{}, the answer's Content-Range is `{}`", asked.first, asked.last, value));
    version.size = got->total;
    // Of another size, the file is another (net/file_version.h says which); then the range was cut where that
    // file ends. A range past a file's end is cut at it (RFC 9110); asked for exactly, when the size is known.
    if (request.version && got->total != request.version->size) return;
    if (got->first != asked.first || got->last != std::min(asked.last, got->total - 1))
      refuse(ErrorCode::kRangeNotHonoured,
             fmt::format("asked for bytes {}-{}{}, the answer's Content-Range is `{}`", asked.first, asked.last,
                         request.version ? fmt::format(" of {}", request.version->size) : "", value));
    limit = got->last - got->first + 1;
    if (!into.empty() && limit != into.size())
      refuse(ErrorCode::kRangeNotHonoured, fmt::format("the answer holds {} bytes, {} were asked", limit, into.size()));
  }

  /// Body bytes: kept (an error answer's start), discarded (a redirect's) or taken, never more than `limit`.
  bool take(const char* data, size_t length) {
    if (meter) *meter += length;
    arrived += length;
    floor.record(Clock::now(), arrived);
    if (is_redirect(status)) return true;
    if (status < 200 || status >= 300) {
      body.append(data, std::min(length, kErrorBodyKept - std::min(kErrorBodyKept, body.size())));
      return true;
    }
    if (received + length > limit) {
      if (!request.range)
        refuse(ErrorCode::kRemote, fmt::format("the answer is larger than {} MiB", request.max_body >> 20));
      refuse(ErrorCode::kRangeNotHonoured, fmt::format("the answer is longer than the {} bytes asked", limit));
    }
    if (!into.empty())
      std::memcpy(into.data() + received, data, length);
    else
      body.append(data, length);
    received += length;
    return true;
  }
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto& transfer = *static_cast<Transfer*>(user);
  std::string_view line(data, size * count);
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
  if (line.starts_with("HTTP/")) {  // a new answer (after a 100 Continue): its headers only
    transfer.headers.clear();
    // "HTTP/1.1 206 Partial Content": the status, 0 for a line that has none
    size_t space = line.find(' ');
    std::string_view code = space == std::string_view::npos ? "" : line.substr(space + 1, 3);
    transfer.status = whole_number<long>(code).value_or(0);
  } else if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    transfer.headers[name] = std::string(value);
  }
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto& transfer = *static_cast<Transfer*>(user);
  try {
    if (!transfer.checked) transfer.check_headers();
    transfer.take(data, size * count);
    return size * count;
  } catch (const Error& e) {
    transfer.failure = e;
    return 0;  // libcurl stops the transfer: a refused answer's body is not read
  }
}

/// libcurl's progress callback, at least once a second while a transfer waits: stops one below the floor.
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto& transfer = *static_cast<Transfer*>(user);
  if (transfer.floor.kept(Clock::now(), transfer.arrived)) return 0;
  transfer.stalled = true;
  return 1;  // CURLE_ABORTED_BY_CALLBACK
}

/// The request's headers: the range, no compression, and the credentials when `url` is their host.
curl_slist* request_headers(CURL* curl, const HttpRequest& request, const Url& url) {
  curl_slist* list = curl_slist_append(nullptr, "Accept-Encoding: identity");
  if (request.range)
    list =
        curl_slist_append(list, fmt::format("Range: bytes={}-{}", request.range->first, request.range->last).c_str());
  const std::optional<HttpCredentials>& credentials = request.credentials;
  if (credentials && credentials->authority == url.authority) {
    if (!credentials->bearer.empty())
      list = curl_slist_append(list, fmt::format("Authorization: Bearer {}", credentials->bearer).c_str());
    if (!credentials->aws_key.empty()) {
      // libcurl signs the path as it is sent (its canonical URI for S3 is the request's path, not encoded again:
      // lib/http_aws_sigv4.c), which holds each key segment percent-encoded once as S3's canonical URI wants.
      curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, fmt::format("aws:amz:{}:s3", credentials->aws_region).c_str());
      curl_easy_setopt(curl, CURLOPT_USERNAME, credentials->aws_key.c_str());
      curl_easy_setopt(curl, CURLOPT_PASSWORD, credentials->aws_secret.c_str());
      // S3 requires the payload's hash in a header, which libcurl 7.88 signs but does not add: a GET's is empty.
      list = curl_slist_append(list, fmt::format("x-amz-content-sha256: {}", kEmptySha256).c_str());
      if (!credentials->aws_session.empty())
        list = curl_slist_append(list, fmt::format("x-amz-security-token: {}", credentials->aws_session).c_str());
    }
  }
  return list;
}

/// One request, no retry, no redirect followed: the transfer's state and libcurl's result.
CURLcode perform(Transfer& transfer) {
  std::optional<Url> url = parse_http_url(transfer.url);
  if (!url) throw Error(ErrorCode::kRemote, fmt::format("{}: not an http(s) URL", transfer.url));
  CURL* curl = thread_handle();
  curl_slist* headers = request_headers(curl, transfer.request, *url);
  curl_easy_setopt(curl, CURLOPT_URL, transfer.url.c_str());
  // An S3 key's `.` and `..` segments are part of the key (S3 signs the path unnormalized): libcurl would otherwise
  // remove them, as RFC 3986 does for a URL, and read another object, perhaps outside the model's prefix.
  if (is_s3_url(*url)) curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 512L << 10);  // fewer, larger writes into a tensor's buffer
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, transfer.limits.interval_seconds);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, transfer.limits.deadline_seconds);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "precdetect");
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  CURLcode code = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  if (code == CURLE_OK && !transfer.checked) {  // an answer without a body still has its headers judged
    try {
      transfer.check_headers();
    } catch (const Error& e) {
      transfer.failure = e;
    }
  }
  return code;
}

bool retryable(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_ABORTED_BY_CALLBACK:  // below the low-speed floor (on_progress)
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

/// Why a try failed in libcurl, in the words of the limit it broke when it broke one.
std::string transport_failure(const Transfer& transfer, CURLcode code, Clock::duration took) {
  const TransferLimits& limits = transfer.limits;
  if (transfer.stalled)
    return fmt::format(
        "the transfer fell below the low-speed floor: fewer than {} bytes in {} s (PRECDETECT_LOW_SPEED_LIMIT={} "
        "bytes per second over HF_HUB_DOWNLOAD_TIMEOUT={} s)",
        limits.low_speed_limit * static_cast<uint64_t>(limits.interval_seconds), limits.interval_seconds,
        limits.low_speed_limit, limits.interval_seconds);
  // A connection that is not made in time is answered by none; an answer that does not end in time is the deadline.
  bool deadline = transfer.status != 0 || took >= std::chrono::seconds(limits.deadline_seconds);
  if (code == CURLE_OPERATION_TIMEDOUT && deadline)
    return fmt::format("the transfer passed its deadline of {} s (PRECDETECT_TRANSFER_DEADLINE)",
                       limits.deadline_seconds);
  if (code == CURLE_OPERATION_TIMEDOUT)
    return fmt::format("no connection within {} s (HF_HUB_DOWNLOAD_TIMEOUT)", limits.interval_seconds);
  return curl_easy_strerror(code);
}

[[noreturn]] void fail_status(const Transfer& transfer) {
  std::string detail = fmt::format("HTTP {}", transfer.status);
  if (!transfer.body.empty()) detail += fmt::format(" ({})", transfer.body.substr(0, 200));
  ErrorCode code = ErrorCode::kRemote;
  if (transfer.status == 401 || transfer.status == 403) {
    code = ErrorCode::kRemoteAuth;
    detail +=
        transfer.request.credentials ? ": the credentials were refused" : ": no credentials were sent for this host";
  }
  if (transfer.status == 404 || transfer.status == 410) code = ErrorCode::kNotFound;
  throw Error(code, fmt::format("{}: {}", transfer.url, detail));
}

HttpResponse response_of(Transfer& transfer) {
  if (transfer.request.range && transfer.received != transfer.limit)
    throw Error(ErrorCode::kRangeNotHonoured, fmt::format("{}: the answer ended after {} of the {} bytes asked",
                                                          transfer.url, transfer.received, transfer.limit));
  return HttpResponse{.status = transfer.status,
                      .url = transfer.url,
                      .headers = std::move(transfer.headers),
                      .body = std::move(transfer.body),
                      .version = std::move(transfer.version)};
}

/// Where a redirect answer from `from` leads: an http(s) URL, never from https to http (the Hub's own clients
/// refuse a downgrade; credentials and bytes would cross the network in the clear).
std::string redirect_target(const std::string& from, const std::string& location) {
  Url base = *parse_http_url(from);
  std::string target = resolve_location(base, location);
  std::optional<Url> next = parse_http_url(target);
  if (!next)
    throw Error(ErrorCode::kRemote, fmt::format("{}: redirected to `{}`, which is no http(s) URL", from, location));
  if (base.scheme == "https" && next->scheme == "http")
    throw Error(ErrorCode::kRemote, fmt::format("{}: redirected from https to http (`{}`): refused", from, target));
  return target;
}

}  // namespace

HttpResponse http_get(const HttpRequest& request, std::span<std::byte> into) {
  if (hf_offline())
    throw Error(ErrorCode::kRemote, fmt::format("{}: HF_HUB_OFFLINE is set: no network is used", request.url));
  TransferLimits limits = transfer_limits();
  std::string url = request.url;
  FileVersion on_the_way;  // the Hub's validators, from the answers before the last (a resolve's redirect)
  int redirects = 0;
  for (int attempt = 1;;) {
    Transfer transfer{.request = request, .limits = limits, .url = url, .into = into, .version = on_the_way};
    Clock::time_point started = Clock::now();
    CURLcode code = perform(transfer);
    if (transfer.failure) throw *transfer.failure;
    bool transient = code != CURLE_OK ? retryable(code) : retryable_status(transfer.status);
    if (transient && attempt < kAttempts) {
      std::optional<std::string_view> retry_after;
      if (auto it = transfer.headers.find("retry-after"); code == CURLE_OK && it != transfer.headers.end())
        retry_after = it->second;
      std::this_thread::sleep_for(retry_delay(attempt++, retry_after, std::chrono::system_clock::now()));
      continue;
    }
    if (code != CURLE_OK)
      throw Error(ErrorCode::kRemote, fmt::format("{}: {} (after {} attempts)", url,
                                                  transport_failure(transfer, code, Clock::now() - started), attempt));
    if (is_redirect(transfer.status) && request.follow_redirects && transfer.headers.contains("location")) {
      if (++redirects > kMaxRedirects)
        throw Error(ErrorCode::kRemote, fmt::format("{}: too many redirects", request.url));
      take_hub_validators(on_the_way, transfer.headers);
      url = redirect_target(url, transfer.headers["location"]);
      continue;
    }
    if (transfer.status < 200 || transfer.status >= 300) fail_status(transfer);
    return response_of(transfer);
  }
}

TransferMeter::TransferMeter() : previous_(std::exchange(t_meter, this)) {}

TransferMeter::~TransferMeter() { t_meter = previous_; }

std::vector<std::string> TransferMeter::unpinned() const {
  std::lock_guard lock(mutex_);
  return unpinned_;
}

std::atomic<uint64_t>* TransferMeter::current() { return t_meter ? &t_meter->bytes_ : nullptr; }

void TransferMeter::note_unpinned(const std::string& url) {
  if (!t_meter) return;
  std::lock_guard lock(t_meter->mutex_);
  if (std::find(t_meter->unpinned_.begin(), t_meter->unpinned_.end(), url) == t_meter->unpinned_.end())
    t_meter->unpinned_.push_back(url);
}

}  // namespace precdetect
