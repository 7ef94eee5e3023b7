#include "precdetect/core/streamed_sha256.h"

#include <algorithm>
#include <utility>

#include "precdetect/core/error.h"

namespace precdetect {
namespace {

thread_local StreamedVerification* t_verification = nullptr;

// The unread rest of a file is read in parts of this size (within the read-ahead window's memory).
constexpr uint64_t kRestPart = uint64_t{16} << 20;

}  // namespace

StreamedSha256::StreamedSha256(std::string url, std::string expected, uint64_t size)
    : url_(std::move(url)), expected_(std::move(expected)), size_(size) {}

void StreamedSha256::take(uint64_t offset, std::span<const std::byte> bytes) {
  std::lock_guard lock(mutex_);
  uint64_t end = offset + bytes.size();
  if (offset > hashed_ || end <= hashed_) return;
  sha_.update(bytes.subspan(hashed_ - offset));
  hashed_ = end;
  if (hashed_ == size_) actual_ = sha_.hex_digest();
}

uint64_t StreamedSha256::hashed() const {
  std::lock_guard lock(mutex_);
  return hashed_;
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
  std::lock_guard lock(mutex_);
  if (size_ == 0 && !actual_) actual_ = sha_.hex_digest();
  digest.hashed = hashed_;
  digest.actual = actual_;
  return digest;
}

StreamedVerification::StreamedVerification() : previous_(std::exchange(t_verification, this)) {}

StreamedVerification::~StreamedVerification() { t_verification = previous_; }

StreamedVerification* StreamedVerification::current() { return t_verification; }

std::shared_ptr<StreamedSha256> StreamedVerification::add(std::string url, std::string expected, uint64_t size) {
  auto file = std::make_shared<StreamedSha256>(std::move(url), std::move(expected), size);
  std::lock_guard lock(mutex_);
  files_.push_back(file);
  return file;
}

std::vector<StreamedDigest> StreamedVerification::finish(bool read_rest) {
  std::lock_guard lock(mutex_);
  std::vector<StreamedDigest> digests;
  for (const auto& file : files_) digests.push_back(file->finish(read_rest));
  return digests;
}

}  // namespace precdetect
