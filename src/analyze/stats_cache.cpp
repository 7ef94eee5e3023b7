#include "precdetect/analyze/stats_cache.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include "precdetect/core/hash.h"

namespace precdetect {
namespace fs = std::filesystem;
namespace {

constexpr const char* kSchema = R"sql(
  PRAGMA journal_mode = WAL;
  PRAGMA synchronous = NORMAL;
  CREATE TABLE IF NOT EXISTS tensor_stats (
    key TEXT PRIMARY KEY,
    numel INTEGER NOT NULL, zeros INTEGER NOT NULL, nans INTEGER NOT NULL, infs INTEGER NOT NULL,
    abs_min REAL, abs_max REAL, sum_squares REAL);
  SELECT count(*) FROM tensor_stats;
)sql";
constexpr int kBusyTimeoutMs = 30'000;
constexpr uint64_t kHashedBytes = 64 << 10;

std::string tensor_key(const std::string& file, const TensorRecord& r) {
  return fmt::format("{}|{}|{}+{}|{}|[{}]|[{}]|{}", file, static_cast<int>(r.dtype), r.offset, r.storage_offset, r.numel,
                     fmt::join(r.shape, ","), fmt::join(r.stride, ","), r.big_endian);
}

/// Opens `path` and makes sure it holds our table; nullptr and the reason when it does not.
sqlite3* open_database(const fs::path& path, std::string& reason) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc == SQLITE_OK) {
    sqlite3_busy_timeout(db, kBusyTimeoutMs);
    rc = sqlite3_exec(db, kSchema, nullptr, nullptr, nullptr);
  }
  if (rc == SQLITE_OK) return db;
  reason = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  sqlite3_close(db);
  return nullptr;
}

void remove_database(const fs::path& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path.string() + suffix, ec);
}

}  // namespace

std::unique_ptr<StatsCache> StatsCache::open(const fs::path& path) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  std::string reason;
  sqlite3* db = open_database(path, reason);
  if (!db && fs::exists(path, ec)) {  // not a cache we can use (corrupt, another program's file): start over
    fmt::print(stderr, "precdetect: cache {} is unusable ({}); rebuilding it\n", path.string(), reason);
    remove_database(path);
    db = open_database(path, reason);
  }
  if (!db) {
    fmt::print(stderr, "precdetect: cache {} cannot be opened ({}); scanning without it\n", path.string(), reason);
    return nullptr;
  }
  return std::unique_ptr<StatsCache>(new StatsCache(db, path));
}

StatsCache::~StatsCache() { sqlite3_close(db_); }

std::string StatsCache::file_identity(const Checkpoint& checkpoint, size_t index) {
  const ByteSource& file = *checkpoint.files[index];
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(file.path(), ec);
  struct stat info {};
  ::stat(file.path().c_str(), &info);
  uint64_t hash = fnv1a(file.view(0, std::min(kHashedBytes, file.size())));
  return fmt::format("{}|{}|{}.{:09}|{:016x}|{}", (ec ? file.path() : canonical).string(), file.size(),
                     info.st_mtim.tv_sec, info.st_mtim.tv_nsec, hash, PRECDETECT_VERSION);
}

std::optional<TensorStats> StatsCache::find(const std::string& file, const TensorRecord& record) {
  std::lock_guard lock(mutex_);
  if (!db_) return std::nullopt;
  sqlite3_stmt* query = nullptr;
  std::string key = tensor_key(file, record);
  std::optional<TensorStats> found;
  int rc = sqlite3_prepare_v2(db_,
                              "SELECT numel, zeros, nans, infs, abs_min, abs_max, sum_squares FROM tensor_stats "
                              "WHERE key = ?",
                              -1, &query, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(query, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
  if (rc == SQLITE_OK) rc = sqlite3_step(query);
  // A NULL real is a NaN SQLite could not store: treated as a miss, the tensor is analyzed again.
  if (rc == SQLITE_ROW && sqlite3_column_type(query, 4) != SQLITE_NULL && sqlite3_column_type(query, 5) != SQLITE_NULL &&
      sqlite3_column_type(query, 6) != SQLITE_NULL) {
    auto count = [&](int column) { return static_cast<uint64_t>(sqlite3_column_int64(query, column)); };
    found = TensorStats{.numel = count(0), .zeros = count(1), .nans = count(2), .infs = count(3),
                        .abs_min = sqlite3_column_double(query, 4), .abs_max = sqlite3_column_double(query, 5),
                        .sum_squares = sqlite3_column_double(query, 6)};
  } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    disable(sqlite3_errmsg(db_));
  }
  sqlite3_finalize(query);
  return found;
}

void StatsCache::store(const std::string& file, const TensorRecord& record, const TensorStats& stats) {
  std::lock_guard lock(mutex_);
  if (!db_) return;
  sqlite3_stmt* insert = nullptr;
  std::string key = tensor_key(file, record);
  int rc = sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO tensor_stats VALUES (?, ?, ?, ?, ?, ?, ?, ?)", -1, &insert,
                              nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(insert, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
  int column = 2;
  for (uint64_t count : {stats.numel, stats.zeros, stats.nans, stats.infs})
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(insert, column++, static_cast<sqlite3_int64>(count));
  for (double value : {stats.abs_min, stats.abs_max, stats.sum_squares})
    if (rc == SQLITE_OK) rc = sqlite3_bind_double(insert, column++, value);
  if (rc == SQLITE_OK) rc = sqlite3_step(insert);
  if (rc != SQLITE_DONE) disable(sqlite3_errmsg(db_));
  sqlite3_finalize(insert);
}

void StatsCache::disable(const std::string& what) {
  fmt::print(stderr, "precdetect: cache {}: {}; continuing without it\n", path_.string(), what);
  sqlite3_close(db_);
  db_ = nullptr;
}

}  // namespace precdetect
