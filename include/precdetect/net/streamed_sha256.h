#pragma once
/// --verify of a remote model (issue 60): each file's SHA-256 computed from the bytes its scan reads, in the file's
/// order, while they arrive (no second download), for app/verify.h to compare with the SHA-256 the server names
/// the file by (the Hub's LFS metadata: the X-Linked-Etag of its resolve answer). The hashing runs on a thread of
/// its own, so that it overlaps the transfers instead of holding up the read-ahead that feeds it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "precdetect/core/sha256.h"

namespace precdetect {

/// What one remote file's hash came to: the facts --verify judges.
struct StreamedDigest {
  std::string url;
  std::string expected;               ///< the SHA-256 the server names the file by; empty when it names none
  std::optional<std::string> actual;  ///< the SHA-256 of its bytes, when every one was hashed
  uint64_t hashed = 0;                ///< bytes hashed, from the file's start
  uint64_t size = 0;
  std::string unread;  ///< why its last bytes could not be read to finish the hash (a network error), if so
};

class HashQueue;

/// One remote file's running SHA-256. A piece of the file that starts at or before the bytes taken so far extends
/// the hash; one further on is passed over (a scan that reads out of order), its bytes read again to finish.
class StreamedSha256 {
 public:
  using Reader = std::function<void(uint64_t offset, std::span<std::byte> dest)>;
  /// Pieces are hashed on `queue`'s thread, which must outlive the hash.
  StreamedSha256(std::string url, std::string expected, uint64_t size, HashQueue& queue);

  /// Bytes [offset, offset + bytes.size()) of the file, just read: what extends the hash is copied to the queue
  /// (waiting while it is full), so the caller may reuse its buffer at once.
  void take(uint64_t offset, std::span<const std::byte> bytes);
  /// Bytes taken, from the file's start: where the next piece must start to extend the hash.
  uint64_t hashed() const;
  /// On the queue's thread: the next bytes of the file, in order.
  void hash(std::span<const std::byte> piece);
  /// How the file's owner reads bytes again (and hands them to take()); an empty one once the owner is closed.
  void set_reader(Reader reader);
  /// The facts. With read_rest (a full scan), bytes the scan did not hash are first read through the reader.
  StreamedDigest finish(bool read_rest);

 private:
  void read_rest(StreamedDigest& digest);

  mutable std::mutex mutex_;  ///< the position taken to: pieces arrive from the scan's threads
  uint64_t taken_ = 0;
  HashQueue& queue_;
  Sha256 sha_;  ///< the queue's thread's alone until finish() has drained the queue
  uint64_t hashed_ = 0;
  std::optional<std::string> actual_;
  std::mutex reader_mutex_;  ///< the reader, which its owner clears when it closes
  Reader reader_;
  const std::string url_, expected_;
  const uint64_t size_;
};

/// While it lives on a thread, each remote file opened on that thread hashes the bytes it reads into it, as a
/// TransferMeter counts them: one model's --verify.
class StreamedVerification {
 public:
  StreamedVerification();
  ~StreamedVerification();
  StreamedVerification(const StreamedVerification&) = delete;
  StreamedVerification& operator=(const StreamedVerification&) = delete;

  /// The innermost one living on this thread; null when none.
  static StreamedVerification* current();
  /// A file opened meanwhile: its hash, to be fed as it is read.
  std::shared_ptr<StreamedSha256> add(std::string url, std::string expected, uint64_t size);
  /// Each file's facts, in the order they were opened. read_rest: the scan read the files' values (a full scan),
  /// so what it left unread is read to finish the hash; otherwise a file not hashed to its end has no `actual`.
  std::vector<StreamedDigest> finish(bool read_rest);

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<StreamedSha256>> files_;
  std::unique_ptr<HashQueue> queue_;  ///< after files_: stopped before they go
  StreamedVerification* previous_;
};

}  // namespace precdetect
