#pragma once
/// A stored tensor seen as the tensor PyTorch holds under its TensorRecord::torch_name: what a diff across
/// formats compares (a Flax kernel against the PyTorch weight it converts to, llama.cpp's q against q_proj, an ONNX
/// exporter's transposed Linear weight against the weight).

#include <vector>

#include "precdetect/load/record_values.h"
#include "precdetect/load/tensor_record.h"

namespace precdetect {

/// The shape PyTorch's tensor has: `record.shape` rearranged as `record.torch_layout` says.
std::vector<int64_t> torch_shape(const TensorRecord& record);

/// `values` (the record's tensor as stored, from read_values) rearranged into PyTorch's tensor.
HostValues to_torch_layout(HostValues values, const TensorRecord& record);

}  // namespace precdetect
