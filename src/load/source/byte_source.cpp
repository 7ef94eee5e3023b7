#include "precdetect/load/source/byte_source.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "precdetect/core/byte_cursor.h"
#include "precdetect/core/error.h"
#include "precdetect/core/open_file.h"
#include "precdetect/core/parallel.h"
#include "precdetect/load/source/mapping_guard.h"
#include "precdetect/load/source/remote_source.h"
#include "precdetect/load/source/source_cursor.h"
#include "precdetect/net/url.h"

namespace precdetect {
namespace {

// Reads are split into parts of at least 4 MiB, as many as the worker pool runs at once: enough requests in
// flight for a cold disk or a network filesystem (at least 8), and for a hot page cache one memcpy per core. 4 MiB
// parts filled the CUDA path's staging buffers faster than 8 MiB ones (docs/benchmarks.md, "Figures behind the code").
constexpr uint64_t kMinReadPart = 4 << 20;
uint64_t read_parts() { return WorkerPool::shared().concurrency(); }

/// Shared range check: every view is validated against the source's size before a byte is touched.
std::span<const std::byte> checked_view(const ByteSource& source, const std::byte* base, uint64_t offset,
                                        uint64_t length) {
  ByteCursor file({base, static_cast<size_t>(source.size())}, source.path(), ErrorCode::kOffsetPastEnd, "");
  return file.at(offset, length, "bytes");
}

class MappedFile final : public ByteSource {
 public:
  MappedFile(std::filesystem::path path, ReadMode mode) : path_(std::move(path)), mode_(mode) {
    OpenFile file = open_for_reading(path_, "weights file");
    size_ = file.size();
    // mmap of length 0 is invalid; an empty file simply has no bytes to view.
    if (size_ > 0) {
      void* mapped = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.fd(), 0);
      if (mapped == MAP_FAILED) fail(ErrorCode::kIo, path_, fmt::format("mmap failed: {}", std::strerror(errno)));
      data_ = static_cast<const std::byte*>(mapped);
      guard_.emplace(data_, size_);
    }
    if (mode_ == ReadMode::kPread) kept_open_.emplace(std::move(file));  // else the mapping keeps the file open
  }
  ~MappedFile() override {
    guard_.reset();  // before the range is unmapped: another mapping may take its addresses
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::filesystem::path& path() const override { return path_; }
  uint64_t size() const override { return size_; }
  std::span<const std::byte> view(uint64_t offset, uint64_t length) const override {
    return checked_view(*this, data_, offset, length);
  }
  std::span<const std::byte> view_at_least(uint64_t offset, uint64_t length) const override {
    view(offset, length);
    return view(offset, size_ - offset);
  }
  void release(uint64_t offset, uint64_t length) const override {
    // Whole pages inside the range only: the neighbours' bytes may still be needed. On a read-only private
    // mapping MADV_DONTNEED just unmaps the pages; the page cache keeps them and a later read faults them back.
    static const uint64_t kPage = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    uint64_t first = (offset + kPage - 1) / kPage * kPage;
    uint64_t last = std::min(offset + length, size_) / kPage * kPage;
    if (data_ && first < last) ::madvise(const_cast<std::byte*>(data_) + first, last - first, MADV_DONTNEED);
    if (guard_ && guard_->faulted()) fail_shrunk();
  }
  void read(uint64_t offset, std::span<std::byte> dest) const override {
    if (mode_ == ReadMode::kMmap) return ByteSource::read(offset, dest);
    checked_view(*this, data_, offset, dest.size());
    for_parts_in_parallel(dest.size(), kMinReadPart, read_parts(), [&](uint64_t begin, uint64_t end) {
      pread_fully(offset + begin, dest.subspan(begin, end - begin));
    });
  }
  bool zero_copy() const override { return mode_ == ReadMode::kMmap; }

 private:
  void pread_fully(uint64_t offset, std::span<std::byte> dest) const {
    while (!dest.empty()) {
      ssize_t got = ::pread(kept_open_->fd(), dest.data(), dest.size(), static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) fail(ErrorCode::kIo, path_, fmt::format("read at offset {}: {}", offset, std::strerror(errno)));
      if (got == 0) fail(ErrorCode::kIo, path_, fmt::format("the file ended at offset {} while being read", offset));
      dest = dest.subspan(static_cast<size_t>(got));
      offset += static_cast<uint64_t>(got);
    }
  }

  [[noreturn]] void fail_shrunk() const {
    std::error_code error;
    uint64_t now = std::filesystem::file_size(path_, error);
    fail(ErrorCode::kIo, path_,
         fmt::format("the file shrank while being read (mapped at {} bytes, now {}): it was changed during the "
                     "scan, and bytes past its new end read as zeros",
                     size_, error ? std::string("unknown") : std::to_string(now)));
  }

  std::filesystem::path path_;
  ReadMode mode_;
  std::optional<OpenFile> kept_open_;  ///< for pread, in ReadMode::kPread
  const std::byte* data_ = nullptr;
  std::optional<MappingGuard> guard_;  ///< reads past a new, shorter end give zeros, not SIGBUS
  uint64_t size_ = 0;
};

/// Bytes held elsewhere, named by a path.
class SpanSource : public ByteSource {
 public:
  SpanSource(std::span<const std::byte> bytes, std::filesystem::path path) : bytes_(bytes), path_(std::move(path)) {}
  const std::filesystem::path& path() const override { return path_; }
  uint64_t size() const override { return bytes_.size(); }
  std::span<const std::byte> view(uint64_t offset, uint64_t length) const override {
    return checked_view(*this, bytes_.data(), offset, length);
  }
  std::span<const std::byte> view_at_least(uint64_t offset, uint64_t length) const override {
    view(offset, length);
    return view(offset, bytes_.size() - offset);
  }

 protected:
  std::span<const std::byte> bytes_;
  std::filesystem::path path_;
};

/// Owns its bytes.
class MemorySource final : public SpanSource {
 public:
  MemorySource(std::string bytes, std::filesystem::path path)
      : SpanSource({}, std::move(path)), owned_(std::move(bytes)) {
    bytes_ = std::as_bytes(std::span(owned_));
  }

 private:
  std::string owned_;
};

/// A member of an archive (a .nemo's model_weights.ckpt): offsets count from the member's first byte, errors
/// name the archive.
class MemberSource final : public ByteSource {
 public:
  MemberSource(std::unique_ptr<ByteSource> archive, uint64_t offset, uint64_t size)
      : archive_(std::move(archive)), offset_(offset), size_(size) {
    member();  // the member lies inside the archive
  }
  const std::filesystem::path& path() const override { return archive_->path(); }
  uint64_t size() const override { return size_; }
  /// The archive's bytes of the range only: a remote archive's member is fetched where it is read.
  std::span<const std::byte> view(uint64_t offset, uint64_t length) const override {
    return member().at(offset, length, "bytes");
  }
  std::span<const std::byte> view_at_least(uint64_t offset, uint64_t length) const override {
    view(offset, length);
    std::span<const std::byte> bytes = archive_->view_at_least(offset_ + offset, length);
    return bytes.first(std::min<uint64_t>(bytes.size(), size_ - offset));
  }
  void release(uint64_t offset, uint64_t length) const override { archive_->release(offset_ + offset, length); }
  void read(uint64_t offset, std::span<std::byte> dest) const override {
    view(offset, dest.size());
    archive_->read(offset_ + offset, dest);
  }
  bool zero_copy() const override { return archive_->zero_copy(); }

 private:
  /// The member's bytes, range-checked as a view of a file of its own is.
  ByteCursor member() const {
    return source_cursor(*archive_, offset_, size_, archive_->path(), ErrorCode::kOffsetPastEnd, "", 0);
  }

  std::unique_ptr<ByteSource> archive_;
  uint64_t offset_, size_;
};

}  // namespace

void ByteSource::read(uint64_t offset, std::span<std::byte> dest) const {
  std::span<const std::byte> source = view(offset, dest.size());
  for_parts_in_parallel(dest.size(), kMinReadPart, read_parts(), [&](uint64_t begin, uint64_t end) {
    std::memcpy(dest.data() + begin, source.data() + begin, end - begin);
  });
}

std::unique_ptr<ByteSource> map_file(const std::filesystem::path& path, ReadMode mode) {
  if (is_url(path.native())) return open_remote(path.native());
  return std::make_unique<MappedFile>(path, mode);
}

std::unique_ptr<ByteSource> member_source(std::unique_ptr<ByteSource> archive, uint64_t offset, uint64_t size) {
  return std::make_unique<MemberSource>(std::move(archive), offset, size);
}

std::unique_ptr<ByteSource> span_source(std::span<const std::byte> bytes, std::filesystem::path path) {
  return std::make_unique<SpanSource>(bytes, std::move(path));
}

std::unique_ptr<ByteSource> memory_source(std::string bytes, std::filesystem::path path) {
  return std::make_unique<MemorySource>(std::move(bytes), std::move(path));
}

}  // namespace precdetect
