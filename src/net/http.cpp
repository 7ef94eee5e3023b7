#include "precdetect/net/http.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "precdetect/core/error.h"

namespace precdetect {
namespace {

thread_local std::atomic<uint64_t>* t_meter = nullptr;

constexpr int kAttempts = 3;            // a transient failure is tried twice more
constexpr int kMaxRedirects = 5;        // as huggingface_hub's requests session
constexpr long kMaxRetryAfter = 60;     // seconds: a longer Retry-After is capped, the scan does not sleep for hours
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

std::optional<ContentRange> parse_content_range(const std::string& value) {
  ContentRange range;
  unsigned long long first = 0, last = 0, total = 0;
  int end = 0;
  if (std::sscanf(value.c_str(), "bytes */%llu%n", &total, &end) == 1 && end == static_cast<int>(value.size()))
    return ContentRange{.total = total, .unsatisfied = true};
  if (std::sscanf(value.c_str(), "bytes %llu-%llu/%llu%n", &first, &last, &total, &end) != 3 ||
      end != static_cast<int>(value.size()) || first > last || last >= total)
    return std::nullopt;
  range.first = first, range.last = last, range.total = total;
  return range;
}

bool is_redirect(long status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

/// One request's state, shared with libcurl's callbacks.
struct Transfer {
  const HttpRequest& request;
  std::string url;
  std::span<std::byte> into;
  long status = 0;
  std::map<std::string, std::string> headers;
  bool checked = false;          // the headers were judged (on the first body byte, or at the end)
  std::optional<Error> failure;  // why the transfer was stopped: never retried
  uint64_t limit = 0, received = 0;
  uint64_t total = 0;
  std::string body;
  std::atomic<uint64_t>* meter = request.meter ? request.meter : TransferMeter::current();

  [[noreturn]] void refuse(ErrorCode code, const std::string& why) {
    throw Error(code, fmt::format("{}: {}", url, why));
  }

  /// A 2xx answer's headers against the request: the range rules. Sets `limit`, the body's exact length.
  void check_headers() {
    checked = true;
    if (status < 200 || status >= 300) return;
    std::string encoding = headers.contains("content-encoding") ? headers["content-encoding"] : "";
    if (!encoding.empty() && encoding != "identity")
      refuse(ErrorCode::kRangeNotHonoured,
             fmt::format("the body is compressed ({}); bytes must arrive as stored", encoding));
    if (!request.range) {
      limit = request.max_body;
      return;
    }
    if (status != 206)
      refuse(ErrorCode::kRangeNotHonoured,
             fmt::format("answered {} to a request for bytes {}-{}: the server does not honour ranges", status,
                         request.range->first, request.range->last));
    check_content_range();
    std::string etag = headers.contains("etag") ? headers["etag"] : "";
    if (!request.etag.empty() && etag != request.etag)
      refuse(ErrorCode::kRemoteChanged,
             fmt::format("the file changed during the scan: its ETag was {}, now {}", request.etag, etag));
  }

  void check_content_range() {
    const HttpRange& asked = *request.range;
    std::string value = headers.contains("content-range") ? headers["content-range"] : "";
    std::optional<ContentRange> got = parse_content_range(value);
    uint64_t expected_total = request.total ? request.total : (got ? got->total : 0);
    // A range past a file's end is cut at it (RFC 9110); asked for exactly, when the total is known.
    bool matches = got && !got->unsatisfied && got->first == asked.first &&
                   got->last == std::min(asked.last, expected_total - 1) && got->total == expected_total;
    if (!matches)
      refuse(ErrorCode::kRangeNotHonoured,
             fmt::format("asked for bytes {}-{}{}, the answer's Content-Range is `{}`", asked.first, asked.last,
                         request.total ? fmt::format(" of {}", request.total) : "", value));
    limit = got->last - got->first + 1;
    total = got->total;
    if (!into.empty() && limit != into.size())
      refuse(ErrorCode::kRangeNotHonoured, fmt::format("the answer holds {} bytes, {} were asked", limit, into.size()));
  }

  /// Body bytes: kept (an error answer's start), discarded (a redirect's) or taken, never more than `limit`.
  bool take(const char* data, size_t length) {
    if (meter) *meter += length;
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
    size_t space = line.find(' ');
    transfer.status = space == std::string_view::npos ? 0 : std::atol(std::string(line.substr(space + 1)).c_str());
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
  long timeout = download_timeout_seconds();
  curl_slist* headers = request_headers(curl, transfer.request, *url);
  curl_easy_setopt(curl, CURLOPT_URL, transfer.url.c_str());
  // An S3 key's `.` and `..` segments are part of the key (S3 signs the path unnormalized): libcurl would otherwise
  // remove them, as RFC 3986 does for a URL, and read another object, perhaps outside the model's prefix.
  if (is_s3_url(*url)) curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 512L << 10);  // fewer, larger writes into a tensor's buffer
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, timeout);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);  // a stalled server: no byte for `timeout` seconds
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, timeout);
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

bool retryable(long status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

/// How long to wait before attempt `attempt` + 1: the server's Retry-After (in seconds, capped), else 0.5 s doubled.
std::chrono::milliseconds backoff(int attempt, const std::map<std::string, std::string>& headers) {
  if (auto it = headers.find("retry-after"); it != headers.end()) {
    long seconds = std::atol(it->second.c_str());
    if (seconds > 0 || it->second == "0") return std::chrono::seconds(std::min(seconds, kMaxRetryAfter));
  }
  return std::chrono::milliseconds(500) * (1 << attempt);
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
  HttpResponse response{
      .status = transfer.status, .url = transfer.url, .body = std::move(transfer.body), .total = transfer.total};
  response.etag = transfer.headers.contains("etag") ? transfer.headers["etag"] : transfer.headers["x-linked-etag"];
  response.headers = std::move(transfer.headers);
  return response;
}

}  // namespace

HttpResponse http_get(const HttpRequest& request, std::span<std::byte> into) {
  if (hf_offline())
    throw Error(ErrorCode::kRemote, fmt::format("{}: HF_HUB_OFFLINE is set: no network is used", request.url));
  std::string url = request.url, linked_etag;
  int redirects = 0;
  for (int attempt = 0;;) {
    Transfer transfer{.request = request, .url = url, .into = into};
    CURLcode code = perform(transfer);
    if (transfer.failure) throw *transfer.failure;
    bool transient = code != CURLE_OK ? retryable(code) : retryable(transfer.status);
    if (transient && ++attempt < kAttempts) {
      std::this_thread::sleep_for(backoff(attempt - 1, transfer.headers));
      continue;
    }
    if (code != CURLE_OK)
      throw Error(ErrorCode::kRemote,
                  fmt::format("{}: {} (after {} attempts)", url, curl_easy_strerror(code), attempt));
    if (linked_etag.empty() && transfer.headers.contains("x-linked-etag"))
      linked_etag = transfer.headers["x-linked-etag"];
    if (is_redirect(transfer.status) && request.follow_redirects && transfer.headers.contains("location")) {
      if (++redirects > kMaxRedirects)
        throw Error(ErrorCode::kRemote, fmt::format("{}: too many redirects", request.url));
      url = resolve_location(*parse_http_url(url), transfer.headers["location"]);
      continue;
    }
    if (transfer.status < 200 || transfer.status >= 300) fail_status(transfer);
    HttpResponse response = response_of(transfer);
    response.linked_etag = std::move(linked_etag);
    return response;
  }
}

TransferMeter::TransferMeter() : previous_(std::exchange(t_meter, &bytes_)) {}

TransferMeter::~TransferMeter() { t_meter = previous_; }

std::atomic<uint64_t>* TransferMeter::current() { return t_meter; }

}  // namespace precdetect
