#include "precdetect/load/torch_layout.h"

#include <numeric>

namespace precdetect {
namespace {

/// Where PyTorch's dimensions come from in a Flax kernel: (3, 2, 0, 1) for a Conv kernel (HWIO to OIHW), all
/// reversed otherwise (numpy's `.T`, which transformers applies to every other kernel).
std::vector<int64_t> flax_kernel_order(size_t dims) {
  if (dims == 4) return {3, 2, 0, 1};
  std::vector<int64_t> order(dims);
  std::iota(order.rbegin(), order.rend(), 0);
  return order;
}

/// llama.cpp stores row (head, i, half) of q or k where PyTorch holds row (head, half, i): each head's rows are
/// split back into their two rotary halves (transformers' LlamaTensorProcessor._reverse_permute_weights).
at::Tensor deinterleave_rope(const at::Tensor& values, int64_t heads) {
  std::vector<int64_t> split{heads, values.size(0) / heads / 2, 2};
  for (int64_t axis = 1; axis < values.dim(); ++axis) split.push_back(values.size(axis));
  return values.reshape(split).transpose(1, 2).reshape(values.sizes());
}

}  // namespace

std::vector<int64_t> torch_shape(const TensorRecord& record) {
  if (record.torch_layout != TorchLayout::kFlaxKernel) return record.shape;
  std::vector<int64_t> shape;
  for (int64_t axis : flax_kernel_order(record.shape.size())) shape.push_back(record.shape[axis]);
  return shape;
}

at::Tensor to_torch_layout(const at::Tensor& values, const TensorRecord& record) {
  switch (record.torch_layout) {
    case TorchLayout::kSame:
      return values;
    case TorchLayout::kFlaxKernel:
      return values.permute(flax_kernel_order(static_cast<size_t>(values.dim())));
    case TorchLayout::kRopeInterleaved:
      return deinterleave_rope(values, record.rope_heads);
  }
  return values;
}

}  // namespace precdetect
