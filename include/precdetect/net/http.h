#pragma once
/// HTTP GET over libcurl, held to the rules careful range readers follow (huggingface_hub, hf-fetch-model): a
/// range request must be answered 206 with exactly the range asked (a 200 is refused without reading its body),
/// the body is exactly that long, uncompressed, of the ETag the file had when first read; credentials go only to
/// the host they are for (redirects are followed by hand); transient failures (a reset, a stall, 429, 5xx) are
/// retried with backoff that honours Retry-After.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>

#include "precdetect/net/remote_env.h"

namespace precdetect {

/// Bytes [first, last] of a file, both included (HTTP's own spelling).
struct HttpRange {
  uint64_t first = 0;
  uint64_t last = 0;
};

struct HttpRequest {
  std::string url;
  std::optional<HttpCredentials> credentials;  ///< sent only to credentials->authority
  std::optional<HttpRange> range;              ///< asked with `Range`; the answer must be 206 for it
  /// Non-empty: a 206 whose ETag differs is Error(kRemoteChanged). The file's ETag, from its first read.
  std::string etag;
  /// Non-zero: the total size Content-Range must name (the file's size, from its first read).
  uint64_t total = 0;
  bool follow_redirects = true;            ///< up to 5, each a new request (credentials dropped when the host changes)
  uint64_t max_body = uint64_t{64} << 20;  ///< a longer body (without a range) is Error(kRemote)
  /// Counts the body bytes received; null: the meter of the calling thread's TransferMeter, if any.
  std::atomic<uint64_t>* meter = nullptr;
};

struct HttpResponse {
  long status = 0;
  std::string url;                             ///< the URL that answered, after redirects
  std::map<std::string, std::string> headers;  ///< the answer's headers, names in lower case
  std::string body;                            ///< when read into a string
  uint64_t total = 0;                          ///< a ranged answer's total size, from Content-Range
  std::string etag;                            ///< ETag, else X-Linked-Etag (the Hub's resolve answer)
  /// X-Linked-Etag of the first answer on the way that had one: the Hub's resolve answer names an LFS file's
  /// SHA-256 there, before it redirects to the CDN (what huggingface_hub's get_hf_file_metadata reads).
  std::string linked_etag;
};

/// Performs `request`. With `into` non-empty the request must carry a range of exactly into.size() bytes, read
/// straight into it; otherwise the body goes into HttpResponse::body. Returns a 2xx answer only. Throws Error
/// naming the URL: kRangeNotHonoured (200 to a range, a Content-Range other than the range asked or the total known,
/// a short or long body, a compressed body), kRemoteChanged (another ETag), kRemoteAuth (401, 403), kNotFound (404,
/// 410), kRemote (any other status, a transport failure or a timeout once retries are spent, a body over
/// max_body, too many redirects).
HttpResponse http_get(const HttpRequest& request, std::span<std::byte> into = {});

/// Counts the body bytes (answers refused or not) of every request made on this thread while it lives, and of the
/// requests of what captures current() meanwhile (a remote file opened while it lives counts its later reads,
/// from any thread): one model's bytes transferred.
class TransferMeter {
 public:
  TransferMeter();
  ~TransferMeter();
  TransferMeter(const TransferMeter&) = delete;
  TransferMeter& operator=(const TransferMeter&) = delete;
  uint64_t bytes() const { return bytes_; }
  /// The innermost meter living on this thread; null when none.
  static std::atomic<uint64_t>* current();

 private:
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t>* previous_;
};

}  // namespace precdetect
