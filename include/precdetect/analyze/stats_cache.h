#pragma once
/// The results cache (--cache FILE): tensor statistics kept in SQLite, so re-scanning an unchanged model reads
/// only its headers. Everything after the statistics (summary, rules, verdict, filters, gates) is recomputed.

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "precdetect/kernel/tensor_stats.h"
#include "precdetect/load/checkpoint.h"

struct sqlite3;

namespace precdetect {

class StatsCache {
 public:
  /// Opens or creates the cache (WAL journal, so concurrent precdetect runs can share it; writers wait up to 30 s
  /// for each other). A file that is not a valid cache is reported on stderr and rebuilt. Returns nullptr, after
  /// a warning, when no cache can be had there: a cache never fails a scan.
  static std::unique_ptr<StatsCache> open(const std::filesystem::path& path);
  ~StatsCache();

  /// The identity of `checkpoint`'s file `index`: canonical path, size, mtime (ns), a hash of its first 64 KiB,
  /// and this precdetect's version; with the path, size and mtime of each file joined behind it (an ONNX model's
  /// external data). Any change to the files gives a new identity, so stale entries are never hit.
  static std::string file_identity(const Checkpoint& checkpoint, size_t index);

  /// The statistics stored for `record`, if any, computed from `inputs`: its file's identity, and for a scaled
  /// weight each linked tensor's layout and file identity (model_analysis).
  std::optional<TensorStats> find(const std::string& inputs, const TensorRecord& record);
  void store(const std::string& inputs, const TensorRecord& record, const TensorStats& stats);

 private:
  StatsCache(sqlite3* db, std::filesystem::path path) : db_(db), path_(std::move(path)) {}
  void disable(const std::string& what);

  sqlite3* db_;
  std::filesystem::path path_;
  std::mutex mutex_;  // one connection shared by the --jobs workers
};

}  // namespace precdetect
