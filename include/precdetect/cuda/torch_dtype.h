#pragma once
/// Our records and host values as libtorch tensors: the CUDA plugin's and the Python extension's side only.

#include <ATen/core/Tensor.h>

#include "precdetect/kernel/host_values.h"
#include "precdetect/load/tensor_record.h"

namespace precdetect {

/// libtorch's scalar type for a floating dtype we analyze (F64, F32, F16, BF16, F8_E4M3, F8_E5M2).
c10::ScalarType torch_scalar_type(DType dtype);
/// The inverse of torch_scalar_type.
DType stored_dtype(c10::ScalarType type);

/// `values` as a CPU tensor over their memory (never written through: it may be a read-only mapping).
at::Tensor host_tensor(const HostValues& values);

/// `record`'s tensor over `storage`, a 1-D tensor of the record's dtype holding its storage's stored bytes (on
/// any device): bytes swapped for big-endian storages, then offset, shape and strides applied.
at::Tensor view_storage(at::Tensor storage, const TensorRecord& record);

}  // namespace precdetect
