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

at::Tensor load_tensor(const Checkpoint& checkpoint, const TensorRecord& record) {
  auto bytes = checkpoint.files[record.file]->view(record.offset, record.nbytes);
  auto options = at::TensorOptions().dtype(torch_scalar_type(record.dtype)).device(at::kCPU);
  size_t element_size = static_cast<size_t>(dtype_bits(record.dtype) / 8);
  auto* data = const_cast<std::byte*>(bytes.data());  // from_blob wants void*; nothing ever writes through it
  if (reinterpret_cast<uintptr_t>(data) % element_size == 0) return at::from_blob(data, record.shape, options);
  at::Tensor aligned = at::empty(record.shape, options);
  std::memcpy(aligned.data_ptr(), data, bytes.size());
  return aligned;
}

}  // namespace precdetect
