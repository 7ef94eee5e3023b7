#pragma once
/// What one run has asked the network already: small texts read whole by URL (a Hub repository's model info, an S3
/// listing page, a shard index, config.json beside remote weights), and every request that failed. Its plan and its
/// models' scans ask for each text once and read one version of it (a repository pushed to mid-run is not planned at
/// one commit and scanned at another), and try each failing URL kAttempts times in all (net/retry.h), not once per
/// stage that asks. The Hub counts its API calls against a rate limit, which a batch of repositories asked three
/// times over reaches sooner.

#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "precdetect/core/error.h"
#include "precdetect/net/http.h"

namespace precdetect {

/// The texts and failures one run has seen. Installed per thread (Scope), never process-wide: a later run (the
/// Python API in a training loop) asks again.
class RemoteTexts {
 public:
  /// Makes `texts` the ones remote_text() and http_get_in_run() use on this thread while the scope lives.
  class Scope {
   public:
    explicit Scope(RemoteTexts& texts);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    RemoteTexts* previous_;
  };

 private:
  friend std::string remote_text(const std::string& url, std::string_view what, uint64_t max_bytes);
  friend HttpResponse http_get_in_run(const HttpRequest& request, std::span<std::byte> into);
  static constexpr uint64_t kMaxKept = uint64_t{64} << 20;  ///< texts beyond this are asked for again
  std::mutex mutex_;
  std::map<std::string, std::string> texts_;
  std::map<std::string, Error> failures_;  ///< by URL: the error its request ended in, after its tries
  uint64_t kept_ = 0;
};

/// http_get(request, into), unless this run's earlier request of request.url failed: then that failure again,
/// without a request. A failure is kept for the run; an answer is not (remote_text keeps texts).
HttpResponse http_get_in_run(const HttpRequest& request, std::span<std::byte> into = {});

/// The body of a GET of `url` (credentials from the environment for its host), at most `max_bytes`: the run's copy
/// when it has read it already. Throws what http_get throws, and the run's earlier failure of `url` again, each
/// naming `what` was asked for ("shard index") after the URL.
std::string remote_text(const std::string& url, std::string_view what, uint64_t max_bytes = HttpRequest{}.max_body);

}  // namespace precdetect
