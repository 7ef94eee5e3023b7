#pragma once
/// HTTP GET over libcurl, held to the rules careful range readers follow (huggingface_hub, hf-fetch-model): a
/// range request must be answered 206 with exactly the range asked (a 200 is refused without reading its body),
/// the body is exactly that long, uncompressed, of the version the file had when first read (net/file_version.h);
/// credentials go only to the host they are for (redirects are followed by hand, only to http(s), never from https
/// to http); every try is bounded (net/remote_env.h's TransferLimits: a low-speed floor, a deadline), and transient
/// failures are tried again as net/retry.h says.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "precdetect/net/file_version.h"
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
  /// Non-null: a 206 of another version (another size, or a validator given otherwise) is Error(kRemoteChanged).
  /// The file's version, from its first read.
  const FileVersion* version = nullptr;
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
  /// The answers' validators (the final one's ETag and Last-Modified, the Hub's on the way) and, for a ranged
  /// answer, the file's size from Content-Range.
  FileVersion version;
};

/// Performs `request`. With `into` non-empty the request must carry a range of exactly into.size() bytes, read
/// straight into it; otherwise the body goes into HttpResponse::body. Returns a 2xx answer only. Throws Error
/// naming the URL: kRangeNotHonoured (200 to a range, a Content-Range other than the range asked, a short or long
/// body, a compressed body), kRemoteChanged (another version), kRemoteAuth (401, 403), kNotFound (404, 410),
/// kRemote (any other status, a transport failure, a try below the low-speed floor or past its deadline once tries
/// are spent, a body over max_body, a redirect refused or one too many, a limit set wrongly).
HttpResponse http_get(const HttpRequest& request, std::span<std::byte> into = {});

/// Counts the body bytes (answers refused or not) of every request made on this thread while it lives, and of the
/// requests of what captures current() meanwhile (a remote file opened while it lives counts its later reads,
/// from any thread): one model's bytes transferred; and the files opened meanwhile that no validator pinned.
class TransferMeter {
 public:
  TransferMeter();
  ~TransferMeter();
  TransferMeter(const TransferMeter&) = delete;
  TransferMeter& operator=(const TransferMeter&) = delete;
  uint64_t bytes() const { return bytes_; }
  /// The files note_unpinned() named while this meter was the innermost, in the order named, each once.
  std::vector<std::string> unpinned() const;
  /// The innermost meter living on this thread; null when none.
  static std::atomic<uint64_t>* current();
  /// Tells the innermost meter living on this thread (if any) that the remote file `url` was opened with no
  /// validator that pins it (FileVersion::pinned): the model's warning kRemoteUnpinned.
  static void note_unpinned(const std::string& url);

 private:
  std::atomic<uint64_t> bytes_{0};
  TransferMeter* previous_;
  mutable std::mutex mutex_;
  std::vector<std::string> unpinned_;
};

}  // namespace precdetect
