#pragma once
/// Several files read as one source, end to end: an ONNX model and the external data files its tensors live in, so
/// that a tensor's record points into the file it lies in like any other (TensorRecord::offset), read in place.

#include <memory>
#include <vector>

#include "precdetect/load/source/byte_source.h"

namespace precdetect {

class JoinedSource final : public ByteSource {
 public:
  /// `first` is the source named in errors (path()); more parts are added with append().
  explicit JoinedSource(std::unique_ptr<ByteSource> first);

  /// Appends `part` after the bytes held so far and returns the offset its first byte has here.
  uint64_t append(std::unique_ptr<ByteSource> part);

  const std::filesystem::path& path() const override { return parts_.front()->path(); }
  uint64_t size() const override { return size_; }
  /// A range of one part (errors about its bytes name that part's file). Throws Error(kOffsetPastEnd) for a range
  /// that crosses from one part into the next, or past the end.
  std::span<const std::byte> view(uint64_t offset, uint64_t length) const override;
  void release(uint64_t offset, uint64_t length) const override;
  void read(uint64_t offset, std::span<std::byte> dest) const override;
  bool zero_copy() const override { return parts_.front()->zero_copy(); }
  /// Every part's files, in order.
  std::vector<std::filesystem::path> files() const override;
  uint64_t own_size() const override { return parts_.front()->own_size(); }
  /// The parts' versions (remote files' ETags), joined: a change to any of them is a change to the whole.
  std::string version() const override;

 private:
  /// The part holding [offset, offset + length), and the range's offset in it.
  std::pair<const ByteSource*, uint64_t> part_of(uint64_t offset, uint64_t length) const;

  std::vector<std::unique_ptr<ByteSource>> parts_;
  std::vector<uint64_t> starts_;  ///< each part's first byte's offset here
  uint64_t size_ = 0;
};

}  // namespace precdetect
