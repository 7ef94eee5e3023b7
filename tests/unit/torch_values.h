#pragma once
// A libtorch tensor as the host values our CPU kernels read (a contiguous copy): tests build their inputs with
// libtorch and hold our torch-free code to its ops.
#include <ATen/core/Tensor.h>

#include <cstring>

#include "precdetect/cuda/torch_dtype.h"

namespace precdetect::testing {

inline HostValues host_values(const at::Tensor& tensor) {
  at::Tensor contiguous = tensor.contiguous();
  std::vector<std::byte> bytes(static_cast<size_t>(contiguous.nbytes()));
  if (!bytes.empty()) std::memcpy(bytes.data(), contiguous.data_ptr(), bytes.size());
  return HostValues(stored_dtype(tensor.scalar_type()), tensor.sizes().vec(), std::move(bytes));
}

/// `values` as a tensor of their own (a copy, so it outlives them).
inline at::Tensor tensor_of(const HostValues& values) { return host_tensor(values).clone(); }

}  // namespace precdetect::testing
