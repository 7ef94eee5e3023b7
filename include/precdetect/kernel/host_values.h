#pragma once
/// A tensor's values on the host as the CPU kernels read them: contiguous, row-major, little-endian and aligned to
/// their element size, in place (borrowed) or in a buffer of their own. load/record_values.h reads a record's.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "precdetect/core/dtype.h"

namespace precdetect {

class HostValues {
 public:
  /// Values borrowed from memory that outlives this object (read only while the checkpoint lives).
  HostValues(DType dtype, std::vector<int64_t> shape, std::span<const std::byte> in_place);
  /// Values in a buffer of their own.
  HostValues(DType dtype, std::vector<int64_t> shape, std::vector<std::byte> owned);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  uint64_t numel() const;
  std::span<const std::byte> bytes() const { return bytes_; }
  const std::byte* data() const { return bytes_.data(); }

 private:
  DType dtype_;
  std::vector<int64_t> shape_;
  std::vector<std::byte> owned_;
  std::span<const std::byte> bytes_;
};

}  // namespace precdetect
