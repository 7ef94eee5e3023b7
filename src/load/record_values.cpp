#include "precdetect/load/record_values.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "precdetect/core/error.h"

namespace precdetect {
namespace {

size_t element_size(DType dtype) { return static_cast<size_t>(dtype_bits(dtype) / 8); }

/// Reverses the bytes of every element in place: big-endian storage read on a little-endian host.
void swap_bytes(std::span<std::byte> bytes, size_t element_size) {
  for (size_t at = 0; at + element_size <= bytes.size(); at += element_size)
    std::reverse(bytes.begin() + static_cast<ptrdiff_t>(at), bytes.begin() + static_cast<ptrdiff_t>(at + element_size));
}

}  // namespace

std::vector<int64_t> contiguous_strides(std::span<const int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t axis = shape.size(); axis-- > 1;) strides[axis - 1] = strides[axis] * shape[axis];
  return strides;
}

int64_t view_extent(std::span<const int64_t> shape, std::span<const int64_t> strides, int64_t offset) {
  int64_t last = offset;
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    if (shape[axis] == 0) return 0;
    last += (shape[axis] - 1) * strides[axis];
  }
  return last + 1;
}

std::vector<std::byte> gather_view(std::span<const std::byte> storage, size_t element_size,
                                   std::span<const int64_t> shape, std::span<const int64_t> strides, int64_t offset) {
  int64_t numel = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  std::vector<std::byte> out(static_cast<size_t>(numel) * element_size);
  if (numel == 0) return out;
  if (shape.empty()) {  // a scalar
    std::memcpy(out.data(), storage.data() + static_cast<size_t>(offset) * element_size, element_size);
    return out;
  }
  std::vector<int64_t> index(shape.size(), 0);
  int64_t source = offset;
  size_t rank = shape.size();
  // Each innermost row is copied in one piece when its elements are adjacent, element by element otherwise.
  int64_t row = shape[rank - 1], step = strides[rank - 1];
  size_t row_bytes = static_cast<size_t>(row) * element_size;
  for (std::byte* target = out.data(); target < out.data() + out.size(); target += row_bytes) {
    const std::byte* from = storage.data() + static_cast<size_t>(source) * element_size;
    if (step == 1) {
      std::memcpy(target, from, row_bytes);
    } else {
      for (int64_t i = 0; i < row; ++i)
        std::memcpy(target + static_cast<size_t>(i) * element_size, from + static_cast<size_t>(i * step) * element_size,
                    element_size);
    }
    for (size_t axis = rank - 1; axis-- > 0;) {  // the next row: an odometer over the outer axes
      source += strides[axis];
      if (++index[axis] < shape[axis]) break;
      source -= strides[axis] * shape[axis];
      index[axis] = 0;
    }
  }
  return out;
}

std::optional<std::span<const std::byte>> values_in_place(const Checkpoint& checkpoint, const TensorRecord& record) {
  const ByteSource& file = *checkpoint.files[record.file];
  if (!file.zero_copy() || !record.stride.empty() || record.big_endian) return std::nullopt;
  uint64_t size = element_size(record.dtype);
  return file.view(record.offset + record.storage_offset * size, record.nbytes);
}

HostValues read_values(const Checkpoint& checkpoint, const TensorRecord& record, std::vector<std::byte>* buffer) {
  size_t size = element_size(record.dtype);
  if (auto bytes = values_in_place(checkpoint, record); bytes && reinterpret_cast<uintptr_t>(bytes->data()) % size == 0)
    return HostValues(record.dtype, record.shape, *bytes);
  const ByteSource& file = *checkpoint.files[record.file];
  std::vector<int64_t> strides = record.stride.empty() ? contiguous_strides(record.shape) : record.stride;
  auto offset = static_cast<int64_t>(record.storage_offset);
  auto extent = static_cast<uint64_t>(view_extent(record.shape, strides, offset));
  if (extent * size > record.storage_nbytes)
    fail(ErrorCode::kStorageTooSmall, file.path(),
         fmt::format("tensor `{}`: its view reaches element {} of a storage of {} bytes", record.name, extent,
                     record.storage_nbytes));
  std::vector<std::byte> values;
  if (file.zero_copy() && record.stride.empty()) {  // contiguous, misaligned or big-endian: one copy
    auto bytes = file.view(record.offset + record.storage_offset * size, record.nbytes);
    values.assign(bytes.begin(), bytes.end());
  } else if (record.stride.empty() && buffer) {
    buffer->resize(record.nbytes);
    file.read(record.offset + record.storage_offset * size, *buffer);
    if (record.big_endian) swap_bytes(*buffer, size);
    return HostValues(record.dtype, record.shape, std::span<const std::byte>(*buffer));
  } else if (record.stride.empty()) {
    values.resize(record.nbytes);
    file.read(record.offset + record.storage_offset * size, values);
  } else {
    std::vector<std::byte> storage(extent * size);
    file.read(record.offset, storage);
    values = gather_view(storage, size, record.shape, strides, offset);
  }
  if (record.big_endian) swap_bytes(values, size);
  return HostValues(record.dtype, record.shape, std::move(values));
}

}  // namespace precdetect
