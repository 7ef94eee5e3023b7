#pragma once
/// A file whose tensors are partly stored encoded (an .npz's deflated members, an HDF5 file's chunked or
/// compressed datasets): its own bytes, followed by one region per encoded tensor, decoded when first viewed and
/// dropped when released, so memory holds the tensors in hand rather than the file.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "precdetect/load/source/byte_source.h"

namespace precdetect {

/// The file's bytes a region is decoded from: released with it, so that neither the decoded nor the mapped
/// encoded bytes stay in memory once the tensor is analyzed.
struct EncodedRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

class DecodedSource final : public ByteSource {
 public:
  /// Writes a region's decoded bytes into `dest` (exactly its size); throws Error naming the file when the
  /// encoded bytes are damaged.
  using Decoder = std::function<void(std::span<std::byte> dest)>;

  explicit DecodedSource(std::unique_ptr<ByteSource> file) : file_(std::move(file)) {}

  /// Adds a region of `size` decoded bytes and returns its offset, past the file's own bytes: a TensorRecord's
  /// offset like any other.
  uint64_t add_region(uint64_t size, Decoder decode, EncodedRange encoded = {});

  const std::filesystem::path& path() const override { return file_->path(); }
  uint64_t size() const override { return file_->size() + regions_size_; }
  /// A range of the file's bytes, or of one region (decoded now unless it is held already). A region's views
  /// end at its release.
  std::span<const std::byte> view(uint64_t offset, uint64_t length) const override;
  /// Drops a region's decoded bytes and releases its encoded ones; the file's own ranges are passed on.
  void release(uint64_t offset, uint64_t length) const override;
  void read(uint64_t offset, std::span<std::byte> dest) const override;
  bool zero_copy() const override { return file_->zero_copy(); }
  std::vector<std::filesystem::path> files() const override { return file_->files(); }
  uint64_t own_size() const override { return file_->own_size(); }
  std::string version() const override { return file_->version(); }

 private:
  struct Region {
    uint64_t size = 0;
    Decoder decode;
    EncodedRange encoded;
    mutable std::string decoded;  ///< empty until viewed, and again once released
  };
  /// The region holding [offset, offset+length), or nullptr for the file's own bytes; throws
  /// Error(kOffsetPastEnd) for a range that crosses a boundary or the end.
  const Region* region_of(uint64_t offset, uint64_t length, uint64_t& begin) const;

  std::unique_ptr<ByteSource> file_;
  std::map<uint64_t, Region> regions_;  ///< by offset
  uint64_t regions_size_ = 0;
  mutable std::mutex mutex_;  ///< decoding and dropping
};

}  // namespace precdetect
