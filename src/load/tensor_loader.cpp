#include "precdetect/load/tensor_loader.h"

#include <ATen/ATen.h>

#include <cstring>

namespace precdetect {

c10::ScalarType torch_scalar_type(DType dtype) {
  switch (dtype) {
    case DType::F64:
      return at::kDouble;
    case DType::F32:
      return at::kFloat;
    case DType::F16:
      return at::kHalf;
    case DType::BF16:
      return at::kBFloat16;
    case DType::F8_E4M3:
      return at::kFloat8_e4m3fn;
    case DType::F8_E5M2:
      return at::kFloat8_e5m2;
    default:
      throw std::invalid_argument("torch_scalar_type: not an analyzed floating dtype");
  }
}

namespace {

/// The whole storage as a 1-D tensor: over the mapped bytes when aligned, else an aligned copy.
at::Tensor load_storage(const Checkpoint& checkpoint, const TensorRecord& record) {
  auto bytes = checkpoint.files[record.file]->view(record.offset, record.storage_nbytes);
  auto options = at::TensorOptions().dtype(torch_scalar_type(record.dtype)).device(at::kCPU);
  int64_t element_size = dtype_bits(record.dtype) / 8;
  int64_t numel = static_cast<int64_t>(bytes.size()) / element_size;
  auto* data = const_cast<std::byte*>(bytes.data());  // from_blob wants void*; nothing ever writes through it
  at::Tensor storage;
  if (reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(element_size) == 0) {
    storage = at::from_blob(data, {numel}, options);
  } else {
    storage = at::empty({numel}, options);
    std::memcpy(storage.data_ptr(), data, static_cast<size_t>(numel * element_size));
  }
  if (record.big_endian)  // reverse the bytes of every element (a copy)
    storage = storage.view(at::kByte).view({numel, element_size}).flip({1}).reshape({-1}).view(storage.scalar_type());
  return storage;
}

}  // namespace

at::Tensor load_tensor(const Checkpoint& checkpoint, const TensorRecord& record) {
  at::Tensor storage = load_storage(checkpoint, record);
  auto offset = static_cast<int64_t>(record.storage_offset);
  if (record.stride.empty()) return storage.narrow(0, offset, static_cast<int64_t>(record.numel)).view(record.shape);
  return storage.as_strided(record.shape, record.stride, offset);
}

}  // namespace precdetect
