#pragma once
/// Small texts read whole by URL (a Hub repository's model info, an S3 listing, a shard index, config.json beside
/// remote weights), kept for one run: its plan and its models' scans ask for each once, and read one version of it
/// (a repository pushed to mid-run is not planned at one commit and scanned at another). The Hub counts its API
/// calls against a rate limit, which a batch of repositories asked three times over reaches sooner.

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace precdetect {

/// The texts one run has read. Installed per thread (Scope), never process-wide: a later run (the Python API in a
/// training loop) asks again.
class RemoteTexts {
 public:
  /// Makes `texts` the ones remote_text() uses on this thread while the scope lives.
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
  friend std::string remote_text(const std::string& url, uint64_t max_bytes);
  static constexpr uint64_t kMaxKept = uint64_t{64} << 20;  ///< texts beyond this are asked for again
  std::mutex mutex_;
  std::map<std::string, std::string> texts_;
  uint64_t kept_ = 0;
};

/// The body of a GET of `url` (credentials from the environment for its host), at most `max_bytes`: the run's
/// copy when it has read it already. Throws what http_get throws; an error is not kept.
std::string remote_text(const std::string& url, uint64_t max_bytes);

}  // namespace precdetect
