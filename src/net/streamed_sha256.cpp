#include "precdetect/net/streamed_sha256.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <thread>
#include <utility>

#include "precdetect/core/error.h"

namespace precdetect {
namespace {

thread_local StreamedVerification* t_verification = nullptr;

// The unread rest of a file is read in parts of this size (within the read-ahead window's memory).
constexpr uint64_t kRestPart = uint64_t{16} << 20;
// Bytes waiting to be hashed, at most: what --verify adds to a scan's memory. A piece is queued in parts of at
// most kQueuePart, so that a tensor larger than the queue still overlaps its last part's hashing with the next fetch.
constexpr uint64_t kQueueBytes = uint64_t{32} << 20;
constexpr uint64_t kQueuePart = uint64_t{8} << 20;

}  // namespace

/// The thread a model's files are hashed on, fed copies of their pieces in order, at most kQueueBytes waiting.
class HashQueue {
 public:
  HashQueue() : thread_([this] { run(); }) {}
  ~HashQueue() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  HashQueue(const HashQueue&) = delete;
  HashQueue& operator=(const HashQueue&) = delete;

  /// Queues a copy of `piece` for `file`, waiting while the queue is full.
  void push(StreamedSha256& file, std::span<const std::byte> piece) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return waiting_ == 0 || waiting_ + piece.size() <= kQueueBytes; });
    pieces_.push_back({&file, {piece.begin(), piece.end()}});
    waiting_ += piece.size();
    changed_.notify_all();
  }

  /// Waits until every piece queued has been hashed.
  void drain() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return waiting_ == 0; });
  }

 private:
  struct Piece {
    StreamedSha256* file;
    std::vector<std::byte> bytes;
  };

  void run() {
    std::unique_lock lock(mutex_);
    while (true) {
      changed_.wait(lock, [&] { return stopping_ || !pieces_.empty(); });
      if (pieces_.empty()) return;  // stopping, and nothing left
      Piece piece = std::move(pieces_.front());
      pieces_.pop_front();
      lock.unlock();
      piece.file->hash(piece.bytes);
      lock.lock();
      waiting_ -= piece.bytes.size();  // counted until hashed: drain() returns once the hash holds them
      changed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Piece> pieces_;
  uint64_t waiting_ = 0;  ///< bytes queued or being hashed
  bool stopping_ = false;
  std::thread thread_;  ///< last: started once the members it uses exist
};

StreamedSha256::StreamedSha256(std::string url, std::string expected, uint64_t size, HashQueue& queue)
    : queue_(queue), url_(std::move(url)), expected_(std::move(expected)), size_(size) {}

void StreamedSha256::take(uint64_t offset, std::span<const std::byte> bytes) {
  std::lock_guard lock(mutex_);  // held while queueing: pieces join the queue in the file's order
  uint64_t end = offset + bytes.size();
  if (offset > taken_ || end <= taken_) return;
  for (auto rest = bytes.subspan(taken_ - offset); !rest.empty();) {
    auto part = rest.first(std::min<size_t>(rest.size(), kQueuePart));
    queue_.push(*this, part);
    rest = rest.subspan(part.size());
  }
  taken_ = end;
}

void StreamedSha256::hash(std::span<const std::byte> piece) {
  sha_.update(piece);
  hashed_ += piece.size();
  if (hashed_ == size_) actual_ = sha_.hex_digest();
}

uint64_t StreamedSha256::hashed() const {
  std::lock_guard lock(mutex_);
  return taken_;
}

void StreamedSha256::set_reader(Reader reader) {
  std::lock_guard lock(reader_mutex_);
  reader_ = std::move(reader);
}

void StreamedSha256::read_rest(StreamedDigest& digest) {
  std::lock_guard lock(reader_mutex_);
  std::vector<std::byte> part;
  try {
    for (uint64_t at = hashed(); reader_ && at < size_;) {
      part.resize(std::min(kRestPart, size_ - at));
      reader_(at, part);
      uint64_t now = hashed();
      if (now <= at) break;  // the reader did not hash what it read: the facts say how far the hash got
      at = now;
    }
  } catch (const Error& e) {
    digest.unread = e.what();
  }
}

StreamedDigest StreamedSha256::finish(bool read_rest) {
  StreamedDigest digest{.url = url_, .expected = expected_, .size = size_};
  if (read_rest) this->read_rest(digest);
  queue_.drain();  // the hash is this thread's from here
  if (size_ == 0 && !actual_) actual_ = sha_.hex_digest();
  digest.hashed = hashed_;
  digest.actual = actual_;
  return digest;
}

StreamedVerification::StreamedVerification()
    : queue_(std::make_unique<HashQueue>()), previous_(std::exchange(t_verification, this)) {}

StreamedVerification::~StreamedVerification() { t_verification = previous_; }

StreamedVerification* StreamedVerification::current() { return t_verification; }

std::shared_ptr<StreamedSha256> StreamedVerification::add(std::string url, std::string expected, uint64_t size) {
  auto file = std::make_shared<StreamedSha256>(std::move(url), std::move(expected), size, *queue_);
  std::lock_guard lock(mutex_);
  files_.push_back(file);
  return file;
}

std::vector<StreamedDigest> StreamedVerification::finish(bool read_rest) {
  std::lock_guard lock(mutex_);
  std::vector<StreamedDigest> digests;
  digests.reserve(files_.size());
  for (const auto& file : files_) digests.push_back(file->finish(read_rest));
  return digests;
}

}  // namespace precdetect
