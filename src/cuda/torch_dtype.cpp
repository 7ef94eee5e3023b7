#include "precdetect/cuda/torch_dtype.h"

#include <ATen/core/Tensor.h>
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

at::Tensor host_tensor(const HostValues& values) {
  auto* data = const_cast<std::byte*>(values.data());  // from_blob wants void*; nothing ever writes through it
  return at::from_blob(data, values.shape(), at::TensorOptions().dtype(torch_scalar_type(values.dtype())));
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
