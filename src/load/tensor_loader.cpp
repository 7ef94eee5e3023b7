#include "precdetect/load/tensor_loader.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>

namespace precdetect {

namespace {

/// The floating dtypes we analyze, with libtorch's name for each.
constexpr std::pair<DType, c10::ScalarType> kAnalyzedTypes[] = {{DType::F64, at::kDouble},
                                                                {DType::F32, at::kFloat},
                                                                {DType::F16, at::kHalf},
                                                                {DType::BF16, at::kBFloat16},
                                                                {DType::F8_E4M3, at::kFloat8_e4m3fn},
                                                                {DType::F8_E5M2, at::kFloat8_e5m2}};

}  // namespace

c10::ScalarType torch_scalar_type(DType dtype) {
  for (auto [ours, torch_type] : kAnalyzedTypes)
    if (ours == dtype) return torch_type;
  throw std::invalid_argument("torch_scalar_type: not an analyzed floating dtype");
}

DType stored_dtype(c10::ScalarType type) {
  for (auto [ours, torch_type] : kAnalyzedTypes)
    if (torch_type == type) return ours;
  throw std::invalid_argument("stored_dtype: not an analyzed floating dtype");
}

namespace {

/// The whole storage as a 1-D tensor: over the mapped bytes when aligned, else read into an aligned tensor
/// (always so with ReadMode::kPread).
at::Tensor load_storage(const Checkpoint& checkpoint, const TensorRecord& record) {
  const ByteSource& file = *checkpoint.files[record.file];
  auto bytes = file.view(record.offset, record.storage_nbytes);  // checks the range
  auto options = at::TensorOptions().dtype(torch_scalar_type(record.dtype)).device(at::kCPU);
  int64_t element_size = dtype_bits(record.dtype) / 8;
  int64_t numel = static_cast<int64_t>(bytes.size()) / element_size;
  auto* data = const_cast<std::byte*>(bytes.data());  // from_blob wants void*; nothing ever writes through it
  at::Tensor storage;
  if (file.zero_copy() && reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(element_size) == 0) {
    storage = at::from_blob(data, {numel}, options);
  } else {
    storage = at::empty({numel}, options);
    file.read(record.offset, {static_cast<std::byte*>(storage.data_ptr()), static_cast<size_t>(storage.nbytes())});
  }
  return storage;
}

}  // namespace

std::optional<std::span<const std::byte>> values_in_place(const Checkpoint& checkpoint, const TensorRecord& record) {
  const ByteSource& file = *checkpoint.files[record.file];
  if (!file.zero_copy() || !record.stride.empty() || record.big_endian) return std::nullopt;
  uint64_t element_size = dtype_bits(record.dtype) / 8;
  return file.view(record.offset + record.storage_offset * element_size, record.nbytes);
}

at::Tensor load_tensor(const Checkpoint& checkpoint, const TensorRecord& record) {
  return view_storage(load_storage(checkpoint, record), record);
}

at::Tensor view_storage(at::Tensor storage, const TensorRecord& record) {
  if (record.big_endian) {  // reverse the bytes of every element (a copy)
    int64_t element_size = dtype_bits(record.dtype) / 8;
    storage = storage.view(at::kByte).view({-1, element_size}).flip({1}).reshape({-1}).view(storage.scalar_type());
  }
  auto offset = static_cast<int64_t>(record.storage_offset);
  if (record.stride.empty()) return storage.narrow(0, offset, static_cast<int64_t>(record.numel)).view(record.shape);
  return storage.as_strided(record.shape, record.stride, offset);
}

}  // namespace precdetect
