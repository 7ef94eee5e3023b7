#include "precdetect/analyze/stats_cache.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <type_traits>

#include "precdetect/core/error.h"
#include "precdetect/core/hash.h"
#include "precdetect/core/output_file.h"

namespace precdetect {
namespace fs = std::filesystem;
namespace {

constexpr const char* kSchema = R"sql(
  PRAGMA journal_mode = WAL;
  PRAGMA synchronous = NORMAL;
  CREATE TABLE IF NOT EXISTS tensor_stats_v3 (key TEXT PRIMARY KEY, stats BLOB NOT NULL);
  SELECT count(*) FROM tensor_stats_v3;
)sql";
// Statistics are stored as their bytes: this machine wrote them and only this build's layout reads them back
// (a row of another size is a miss). The table name changes whenever TensorStats does.
static_assert(std::is_trivially_copyable_v<TensorStats>);
constexpr int kBusyTimeoutMs = 30'000;
constexpr int kOpenAttempts = 200;  // x 50 ms: a lock held longer than 10 s is a cache to scan without
constexpr uint64_t kHashedBytes = 64 << 10;

/// A linked weight's statistics are those of its dequantized values: how the link computes them is part of the key
/// (the parts' own bytes are in `inputs`).
std::string tensor_key(const std::string& inputs, const TensorRecord& r, const Link* link) {
  return fmt::format("{}|{}|{}+{}|{}|[{}]|[{}]|{}{}", inputs, static_cast<int>(r.dtype), r.offset, r.storage_offset,
                     r.numel, fmt::join(r.shape, ","), fmt::join(r.stride, ","), r.big_endian,
                     link ? "|x" + link->key() : "");
}

/// Opens `path` and makes sure it holds our table; nullptr and the reason when it does not, `busy` set when another
/// process holds it locked (a cache in use, never one to rebuild).
sqlite3* open_database(const fs::path& path, std::string& reason, bool& busy) {
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc == SQLITE_OK) {
    sqlite3_busy_timeout(db, kBusyTimeoutMs);
    rc = sqlite3_exec(db, kSchema, nullptr, nullptr, nullptr);
  }
  if (rc == SQLITE_OK) return db;
  busy = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
  reason = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  sqlite3_close(db);
  return nullptr;
}

/// open_database, waiting out another process's lock: switching a new file to WAL takes a lock the busy handler
/// does not wait for, so runs started together find the cache busy for a moment (tests/e2e/test_batch.py).
sqlite3* open_when_free(const fs::path& path, std::string& reason, bool& busy) {
  for (int attempt = 0;; ++attempt) {
    busy = false;
    if (sqlite3* db = open_database(path, reason, busy)) return db;
    if (!busy || attempt == kOpenAttempts) return nullptr;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void remove_database(const fs::path& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path.string() + suffix, ec);
}

/// The regular file (or new name) `path` leads to, links followed, so that rebuilding a cache never removes a
/// link, a device or a FIFO the user named; nullopt and the reason otherwise.
std::optional<fs::path> database_file(const fs::path& path, std::string& reason) {
  try {
    OutputTarget target = resolve_output_target(path);
    if (target.kind == OutputTarget::Kind::kFile) return target.path;
    reason = "not a regular file";
  } catch (const Error& e) {
    reason = e.what();
  }
  return std::nullopt;
}

}  // namespace

std::unique_ptr<StatsCache> StatsCache::open(const fs::path& path) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  std::string reason;
  bool busy = false;
  std::optional<fs::path> file = database_file(path, reason);
  sqlite3* db = file ? open_when_free(*file, reason, busy) : nullptr;
  // Not a cache we can use (corrupt, another program's file): start over; one another run holds is left alone.
  if (!db && !busy && file && fs::exists(*file, ec)) {
    fmt::print(stderr, "precdetect: cache {} is unusable ({}); rebuilding it\n", path.string(), reason);
    remove_database(*file);
    db = open_when_free(*file, reason, busy);
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
  if (std::string version = file.version(); !version.empty())  // a remote file: its URL and ETag name its bytes
    return fmt::format("{}|{}|{}|{}", file.path().string(), file.size(), version, PRECDETECT_VERSION);
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(file.path(), ec);
  struct stat info {};
  ::stat(file.path().c_str(), &info);
  // The file's own bytes: a source that adds decoded regions or joined files after them may hold fewer than
  // kHashedBytes of its own, and no view may cross into what it added.
  uint64_t hash = fnv1a(file.view(0, std::min(kHashedBytes, file.own_size())));
  std::string identity = fmt::format("{}|{}|{}.{:09}|{:016x}|{}", (ec ? file.path() : canonical).string(), file.size(),
                                     info.st_mtim.tv_sec, info.st_mtim.tv_nsec, hash, PRECDETECT_VERSION);
  std::vector<fs::path> files = file.files();
  for (size_t i = 1; i < files.size(); ++i) {  // the files joined behind it (an ONNX model's external data)
    ::stat(files[i].c_str(), &info);
    identity +=
        fmt::format("|{}|{}|{}.{:09}", files[i].string(), info.st_size, info.st_mtim.tv_sec, info.st_mtim.tv_nsec);
  }
  return identity;
}

std::optional<TensorStats> StatsCache::find(const std::string& inputs, const TensorRecord& record, const Link* link) {
  std::lock_guard lock(mutex_);
  if (!db_) return std::nullopt;
  sqlite3_stmt* query = nullptr;
  std::string key = tensor_key(inputs, record, link);
  std::optional<TensorStats> found;
  int rc = sqlite3_prepare_v2(db_, "SELECT stats FROM tensor_stats_v3 WHERE key = ?", -1, &query, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(query, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
  if (rc == SQLITE_OK) rc = sqlite3_step(query);
  if (rc == SQLITE_ROW && sqlite3_column_bytes(query, 0) == static_cast<int>(sizeof(TensorStats))) {
    found.emplace();
    std::memcpy(&*found, sqlite3_column_blob(query, 0), sizeof(TensorStats));
  } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    disable(sqlite3_errmsg(db_));
  }
  sqlite3_finalize(query);
  return found;
}

void StatsCache::store(const std::string& inputs, const TensorRecord& record, const TensorStats& stats,
                       const Link* link) {
  std::lock_guard lock(mutex_);
  if (!db_) return;
  sqlite3_stmt* insert = nullptr;
  std::string key = tensor_key(inputs, record, link);
  int rc = sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO tensor_stats_v3 VALUES (?, ?)", -1, &insert, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(insert, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
  if (rc == SQLITE_OK) rc = sqlite3_bind_blob(insert, 2, &stats, sizeof(stats), SQLITE_TRANSIENT);
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
