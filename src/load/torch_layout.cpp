#include "precdetect/load/torch_layout.h"

#include <numeric>

namespace precdetect {
namespace {

/// Where PyTorch's dimensions come from in a Flax kernel: (3, 2, 0, 1) for a Conv kernel (HWIO to OIHW), all
/// reversed otherwise (numpy's `.T`, which transformers applies to every other kernel).
std::vector<size_t> flax_kernel_order(size_t dims) {
  if (dims == 4) return {3, 2, 0, 1};
  std::vector<size_t> order(dims);
  std::iota(order.rbegin(), order.rend(), 0);
  return order;
}

/// `values` (contiguous, of `shape`) with their axes in `order`, as numpy's transpose copies them.
HostValues permuted(const HostValues& values, const std::vector<int64_t>& shape, const std::vector<size_t>& order,
                    std::vector<int64_t> result_shape) {
  std::vector<int64_t> strides = contiguous_strides(shape);
  std::vector<int64_t> view_shape, view_strides;
  for (size_t axis : order) {
    view_shape.push_back(shape[axis]);
    view_strides.push_back(strides[axis]);
  }
  auto element_size = static_cast<size_t>(dtype_bits(values.dtype()) / 8);
  return HostValues(values.dtype(), std::move(result_shape),
                    gather_view(values.bytes(), element_size, view_shape, view_strides, 0));
}

/// llama.cpp stores row (head, i, half) of q or k where PyTorch holds row (head, half, i): each head's rows are
/// split back into their two rotary halves (transformers' LlamaTensorProcessor._reverse_permute_weights).
HostValues deinterleave_rope(const HostValues& values, int64_t heads) {
  const std::vector<int64_t>& shape = values.shape();
  std::vector<int64_t> split{heads, shape[0] / heads / 2, 2};
  split.insert(split.end(), shape.begin() + 1, shape.end());
  std::vector<size_t> order(split.size());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[1], order[2]);
  return permuted(values, split, order, shape);
}

/// Where PyTorch's dimensions come from in a stored tensor whose axes are rearranged (kFlaxKernel, kTransposed).
std::vector<size_t> torch_order(const TensorRecord& record, size_t dims) {
  if (record.torch_layout == TorchLayout::kFlaxKernel) return flax_kernel_order(dims);
  std::vector<size_t> order(dims);
  std::iota(order.rbegin(), order.rend(), 0);  // kTransposed: a 2-D tensor's axes swapped
  return order;
}

}  // namespace

std::vector<int64_t> torch_shape(const TensorRecord& record) {
  if (record.torch_layout != TorchLayout::kFlaxKernel && record.torch_layout != TorchLayout::kTransposed)
    return record.shape;
  std::vector<int64_t> shape;
  for (size_t axis : torch_order(record, record.shape.size())) shape.push_back(record.shape[axis]);
  return shape;
}

HostValues to_torch_layout(HostValues values, const TensorRecord& record) {
  switch (record.torch_layout) {
    case TorchLayout::kSame:
      return values;
    case TorchLayout::kFlaxKernel:
    case TorchLayout::kTransposed:
      return permuted(values, values.shape(), torch_order(record, values.shape().size()), torch_shape(record));
    case TorchLayout::kRopeInterleaved:
      return deinterleave_rope(values, record.rope_heads);
  }
  return values;
}

}  // namespace precdetect
