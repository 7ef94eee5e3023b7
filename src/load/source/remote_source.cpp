#include "precdetect/load/source/remote_source.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "precdetect/core/byte_cursor.h"
#include "precdetect/core/error.h"
#include "precdetect/core/sha256.h"
#include "precdetect/core/worker_pool.h"
#include "precdetect/net/http.h"
#include "precdetect/net/streamed_sha256.h"

namespace precdetect {
namespace {

// The first read of a file: a safetensors, GGUF or zip header is often inside it, read in one request.
constexpr uint64_t kFirstRead = uint64_t{64} << 10;
// A view fetches whole blocks of a page: a zip's local headers cost a few KiB each, not a tensor's worth.
constexpr uint64_t kBlock = uint64_t{4} << 10;
// A view that misses where the last fetch ended is a walk through the file (a GGUF's vocabulary, a tar's headers):
// each such fetch reads twice as far ahead as the one before, up to this, so megabytes of header cost a few
// requests; any other miss fetches only the blocks it needs.
constexpr uint64_t kMaxReadAhead = uint64_t{4} << 20;
// A tensor is fetched in parts of at least 8 MiB, several at once: requests in flight hide a network's latency.
constexpr uint64_t kMinReadPart = uint64_t{8} << 20;
constexpr size_t kRequestsInFlight = 8;
// A small tensor (a norm, a bias, a LoRA's factors) is read through a window of the bytes from it on, one request
// for the tensors that follow it: hundreds of requests of a few KiB each would cost a round trip apiece.
constexpr uint64_t kSmallRead = uint64_t{256} << 10;
constexpr uint64_t kSmallReadWindow = uint64_t{2} << 20;
// Prefetched blocks less than this apart are fetched in one request with the bytes between them: a few KiB more
// cost less than a round trip.
constexpr uint64_t kPrefetchGap = uint64_t{64} << 10;

/// The SHA-256 an ETag names (`"HEX"`, the Hub's X-Linked-Etag of an LFS file), else "".
std::string sha256_named(std::string etag) {
  if (etag.starts_with("W/")) etag.erase(0, 2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return is_sha256(etag) ? etag : "";
}

/// The threads ranges are fetched on: the process's worker pool is the kernel's, and a transfer queued behind its
/// loops would stop the read-ahead from overlapping them; each thread keeps its connections (core/http.h).
WorkerPool& transfer_pool() {
  static WorkerPool pool(kRequestsInFlight - 1);  // and the caller
  return pool;
}

class RemoteFile final : public ByteSource {
 public:
  explicit RemoteFile(const std::string& url) : path_(url) {
    std::optional<Url> parsed = parse_http_url(url);
    if (!parsed) fail(ErrorCode::kRemote, path_, "not an http(s) URL");
    credentials_ = credentials_for(*parsed);
    HttpResponse probe =
        http_get({.url = url, .credentials = credentials_, .range = HttpRange{0, kFirstRead - 1}, .meter = meter_});
    // Every later range goes where the first was answered (the Hub's CDN), without credentials when that is
    // another host, and must come from the same version of the file.
    data_url_ = probe.url;
    etag_ = probe.etag;
    size_ = probe.total;
    reserve();
    if (StreamedVerification* verification = StreamedVerification::current()) {
      hash_ = verification->add(url, sha256_named(probe.linked_etag), size_);
      hash_->set_reader([this](uint64_t offset, std::span<std::byte> dest) { read(offset, dest); });
    }
    if (size_ > 0) {
      std::memcpy(data_, probe.body.data(), probe.body.size());
      std::lock_guard lock(mutex_);
      fetched_end_ = fetched_length_ = probe.body.size();
      mark(0, probe.body.size(), true);
      hash_fetched(0, {data_, probe.body.size()});
    }
  }
  ~RemoteFile() override {
    if (hash_) hash_->set_reader({});
    if (data_) ::munmap(data_, size_);
  }
  RemoteFile(const RemoteFile&) = delete;
  RemoteFile& operator=(const RemoteFile&) = delete;

  const std::filesystem::path& path() const override { return path_; }
  uint64_t size() const override { return size_; }
  bool zero_copy() const override { return false; }
  std::string version() const override { return etag_; }

  std::span<const std::byte> view(uint64_t offset, uint64_t length) const override {
    std::span<const std::byte> bytes = checked(offset, length);
    if (length > kMaxRemoteView)
      fail(
          ErrorCode::kRemote, path_,
          fmt::format("the format reads {} MiB of this file at once (at offset {}), more than the {} MiB a remote file "
                      "may hold in memory: download it and scan the local copy",
                      length >> 20, offset, kMaxRemoteView >> 20));
    std::lock_guard lock(mutex_);
    uint64_t first = offset / kBlock, end = (offset + length + kBlock - 1) / kBlock;
    for (uint64_t block = first; block < end;) {  // each run of missing blocks in one request
      if (have_[block]) {
        ++block;
        continue;
      }
      uint64_t run = block;
      while (run < end && !have_[run]) ++run;
      fetch(block * kBlock, std::min(read_ahead(block, run) * kBlock, size_));
      block = run;
    }
    return bytes;
  }

  /// The view, and the blocks held after it (a read-ahead's): as far as a walk can go without a request.
  std::span<const std::byte> view_at_least(uint64_t offset, uint64_t length) const override {
    view(offset, length);
    std::lock_guard lock(mutex_);
    uint64_t block = length > 0 ? (offset + length + kBlock - 1) / kBlock : offset / kBlock;
    while (block < have_.size() && have_[block]) ++block;
    uint64_t end = std::max(offset + length, std::min(block * kBlock, size_));
    return {data_ + offset, static_cast<size_t>(end - offset)};
  }

  void read(uint64_t offset, std::span<std::byte> dest) const override {
    checked(offset, dest.size());
    if (dest.empty()) return;  // an empty tensor: nothing to fetch (and memcpy takes no null pointer)
    // What is here already (blocks a view fetched, the small reads' window) is not fetched again: read in order,
    // each byte of a file moves once.
    uint64_t done = copy_held(offset, dest);
    if (done < dest.size() && dest.size() <= kSmallRead) {
      read_small(offset, dest);
    } else if (done < dest.size()) {
      done += copy_from_window(offset + done, dest.subspan(done));
      // A tensor's bytes go straight to the caller, never into the cache.
      if (done < dest.size()) read_uncached(offset + done, dest.subspan(done));
    }
    hash_read(offset, dest);  // nothing when hashed already, as they were fetched
  }

  /// The missing blocks of `ranges` in a few requests, on the transfer threads, into the cache as view() keeps them.
  void prefetch(std::span<const ByteRange> ranges) const override {
    std::lock_guard lock(mutex_);
    std::vector<ByteRange> runs = missing_runs(ranges);
    transfer_pool().run(runs.size(), [&](size_t i) {
      get(runs[i].offset, {data_ + runs[i].offset, static_cast<size_t>(runs[i].length)});
    });
    for (const ByteRange& run : runs) {
      mark(run.offset, run.offset + run.length, true);
      hash_fetched(run.offset, {data_ + run.offset, static_cast<size_t>(run.length)});
    }
  }

  void release(uint64_t offset, uint64_t length) const override {
    std::lock_guard lock(mutex_);
    uint64_t first = (offset + kBlock - 1) / kBlock, end = std::min(offset + length, size_) / kBlock;
    if (first >= end) return;
    ::madvise(data_ + first * kBlock, (end - first) * kBlock, MADV_DONTNEED);  // anonymous: the pages are freed
    std::fill(have_.begin() + static_cast<ptrdiff_t>(first), have_.begin() + static_cast<ptrdiff_t>(end), false);
  }

 private:
  /// Address space for the whole file, no memory: pages exist only where bytes were fetched.
  void reserve() {
    if (size_ == 0) return;
    void* mapped = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mapped == MAP_FAILED) fail(ErrorCode::kIo, path_, fmt::format("cannot reserve {} bytes", size_));
    data_ = static_cast<std::byte*>(mapped);
    have_.assign((size_ + kBlock - 1) / kBlock, false);
  }

  std::span<const std::byte> checked(uint64_t offset, uint64_t length) const {
    ByteCursor file({data_, static_cast<size_t>(size_)}, path_, ErrorCode::kOffsetPastEnd, "");
    return file.at(offset, length, "bytes");
  }

  /// Copies the start of dest's bytes that held blocks hold; returns how many.
  uint64_t copy_held(uint64_t offset, std::span<std::byte> dest) const {
    std::lock_guard lock(mutex_);
    uint64_t end = offset;
    while (end < offset + dest.size() && have_[end / kBlock]) end = std::min((end / kBlock + 1) * kBlock, size_);
    uint64_t length = std::min<uint64_t>(end - offset, dest.size());
    if (length > 0) std::memcpy(dest.data(), data_ + offset, length);
    return length;
  }

  /// Copies the start of dest's bytes that the small reads' window holds; returns how many.
  uint64_t copy_from_window(uint64_t offset, std::span<std::byte> dest) const {
    std::lock_guard lock(window_mutex_);
    if (offset < window_begin_ || offset >= window_begin_ + window_.size()) return 0;
    uint64_t length = std::min<uint64_t>(window_begin_ + window_.size() - offset, dest.size());
    std::memcpy(dest.data(), window_.data() + (offset - window_begin_), length);
    return length;
  }

  /// Where a fetch of the missing blocks [first, end) ends (mutex_ held): at `end`, or further when it continues
  /// the last fetch, twice as far as that went (at most kMaxReadAhead), stopping at a held block.
  uint64_t read_ahead(uint64_t first, uint64_t end) const {
    uint64_t blocks = end - first;
    if (first * kBlock == fetched_end_)
      blocks = std::max(blocks, std::min(2 * fetched_length_, kMaxReadAhead) / kBlock);
    uint64_t ahead = std::min<uint64_t>(first + blocks, have_.size());
    while (end < ahead && !have_[end]) ++end;
    fetched_end_ = std::min(end * kBlock, size_);
    fetched_length_ = fetched_end_ - first * kBlock;
    return end;
  }

  /// Marks the blocks [begin, end) covers whole (or reaching the file's end) as held or not.
  void mark(uint64_t begin, uint64_t end, bool value) const {
    for (uint64_t block = begin / kBlock; block * kBlock < end; ++block)
      if ((block + 1) * kBlock <= end || end == size_) have_[block] = value;
  }

  /// The blocks `ranges` touch inside the file that are not held, in order, as runs to fetch: a run takes in the
  /// next block when the blocks between them are missing too and under kPrefetchGap, up to kMinReadPart in all
  /// (mutex_ held).
  std::vector<ByteRange> missing_runs(std::span<const ByteRange> ranges) const {
    std::vector<uint64_t> blocks;
    for (const ByteRange& range : ranges) {
      if (range.offset >= size_) continue;
      uint64_t end = range.offset + std::min(range.length, size_ - range.offset);
      for (uint64_t block = range.offset / kBlock; block * kBlock < end; ++block)
        if (!have_[block]) blocks.push_back(block);
    }
    std::sort(blocks.begin(), blocks.end());
    blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
    std::vector<ByteRange> runs;
    for (uint64_t block : blocks) {
      uint64_t begin = block * kBlock, end = std::min(begin + kBlock, size_);
      if (!runs.empty()) {
        ByteRange& run = runs.back();
        uint64_t run_end = run.offset + run.length;
        bool gap_missing = std::none_of(have_.begin() + static_cast<ptrdiff_t>(run_end / kBlock),
                                        have_.begin() + static_cast<ptrdiff_t>(block), [](bool held) { return held; });
        if (begin - run_end < kPrefetchGap && gap_missing && end - run.offset <= kMinReadPart) {
          run.length = end - run.offset;
          continue;
        }
      }
      runs.push_back({begin, end - begin});
    }
    return runs;
  }

  /// Bytes [begin, end) into the cache, in parallel parts when many (mutex_ held).
  void fetch(uint64_t begin, uint64_t end) const {
    read_uncached(begin, {data_ + begin, static_cast<size_t>(end - begin)});
    mark(begin, end, true);
    hash_fetched(begin, {data_ + begin, static_cast<size_t>(end - begin)});
  }

  /// --verify: bytes just fetched extend the file's hash where they continue it, and so do the blocks held after
  /// them (a zip's local headers between two storages, fetched when its directory was read). mutex_ held.
  void hash_fetched(uint64_t offset, std::span<const std::byte> bytes) const {
    if (!hash_) return;
    hash_->take(offset, bytes);
    hash_held();
  }

  /// hash_fetched for bytes read outside the cache: hashed without mutex_, which the kernel's release() takes.
  void hash_read(uint64_t offset, std::span<const std::byte> bytes) const {
    if (!hash_) return;
    hash_->take(offset, bytes);
    std::lock_guard lock(mutex_);
    hash_held();
  }

  /// Extends the hash through the blocks held from where it stands (mutex_ held).
  void hash_held() const {
    if (!hash_) return;
    uint64_t begin = hash_->hashed(), end = begin;
    while (end < size_ && have_[end / kBlock]) end = std::min((end / kBlock + 1) * kBlock, size_);
    if (end > begin) hash_->take(begin, {data_ + begin, static_cast<size_t>(end - begin)});
  }

  void read_uncached(uint64_t offset, std::span<std::byte> dest) const {
    uint64_t parts = std::clamp<uint64_t>(dest.size() / kMinReadPart, 1, kRequestsInFlight);
    uint64_t part = (dest.size() + parts - 1) / parts;
    transfer_pool().run(parts, [&](size_t i) {
      uint64_t begin = i * part, end = std::min<uint64_t>(begin + part, dest.size());
      get(offset + begin, dest.subspan(begin, end - begin));
    });
  }

  /// A small read, from the window of kSmallReadWindow bytes it starts (or the one it falls inside).
  void read_small(uint64_t offset, std::span<std::byte> dest) const {
    std::lock_guard lock(window_mutex_);
    if (offset < window_begin_ || offset + dest.size() > window_begin_ + window_.size()) {
      window_.clear();  // until the fetch succeeds, the window holds nothing
      std::vector<std::byte> bytes(std::min(kSmallReadWindow, size_ - offset));
      get(offset, bytes);
      window_ = std::move(bytes);
      window_begin_ = offset;
      hash_read(window_begin_, window_);
    }
    std::memcpy(dest.data(), window_.data() + (offset - window_begin_), dest.size());
  }

  /// One ranged request for exactly dest.size() bytes at `offset`, held to the file's size and ETag.
  void get(uint64_t offset, std::span<std::byte> dest) const {
    if (dest.empty()) return;
    std::string url = data_url();
    HttpRequest request{.url = url,
                        .credentials = credentials_,
                        .range = HttpRange{offset, offset + dest.size() - 1},
                        .etag = etag_,
                        .total = size_,
                        .follow_redirects = false,
                        .meter = meter_};
    try {
      http_get(request, dest);
    } catch (const Error& e) {
      // The Hub's CDN links are signed and expire, and a long scan may outlive one: a refusal from where the file
      // was redirected is asked once more through its own URL, whose redirect gives a fresh link. The answer is
      // held to the same ETag, so the bytes are still the file's.
      if (e.code() != ErrorCode::kRemoteAuth || url == path_.string()) throw;
      request.url = path_.string();
      request.follow_redirects = true;
      std::string fresh = http_get(request, dest).url;
      std::lock_guard lock(url_mutex_);
      data_url_ = fresh;
    }
  }

  std::string data_url() const {
    std::lock_guard lock(url_mutex_);
    return data_url_;
  }

  std::filesystem::path path_;
  mutable std::string data_url_;  ///< where ranges are asked: the Hub's CDN link, renewed when it expires
  mutable std::mutex url_mutex_;
  std::string etag_;
  std::optional<HttpCredentials> credentials_;
  std::atomic<uint64_t>* meter_ = TransferMeter::current();  ///< the model's, counting reads from any thread
  std::shared_ptr<StreamedSha256> hash_;                     ///< with --verify: the file's SHA-256 as it is read
  uint64_t size_ = 0;
  std::byte* data_ = nullptr;
  mutable std::vector<bool> have_;                         ///< per kBlock: fetched and not released
  mutable uint64_t fetched_end_ = 0, fetched_length_ = 0;  ///< the last fetch of a view: where it ended, how long
  mutable std::mutex mutex_;
  mutable std::vector<std::byte> window_;  ///< read_small's bytes, from window_begin_
  mutable uint64_t window_begin_ = 0;
  mutable std::mutex window_mutex_;
};

}  // namespace

std::unique_ptr<ByteSource> open_remote(const std::string& url) { return std::make_unique<RemoteFile>(url); }

}  // namespace precdetect
