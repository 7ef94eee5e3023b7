#include "precdetect/diff/checkpoint_diff.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "precdetect/analyze/tensor_groups.h"
#include "precdetect/load/tensor_loader.h"

namespace precdetect {
namespace {

/// The tensors compared, by the name PyTorch gives them: a Flax path is paired by its torch_name, so a Flax file
/// and the safetensors converted from it are compared tensor by tensor.
std::map<std::string, const TensorRecord*> model_tensors(const Checkpoint& checkpoint, const TensorFilter& filter) {
  std::map<std::string, const TensorRecord*> tensors;
  for (const TensorRecord& record : checkpoint.tensors)
    if (record.role != TensorRole::kOptimizer && record.counted && filter.selects(record.name))
      tensors.emplace(record.torch_name.value_or(record.name), &record);
  return tensors;
}

/// A Flax Dense kernel is stored [in, out], the PyTorch weight it becomes [out, in]: the pair is compared with
/// the kernel transposed, as transformers converts it.
bool transposed_kernel(const TensorRecord& a, const TensorRecord& b) {
  return a.shape.size() == 2 && a.shape != b.shape && b.shape == std::vector<int64_t>{a.shape[1], a.shape[0]} &&
         (a.torch_name.has_value() != b.torch_name.has_value());
}

void add_to_totals(PairDiff& pair, const TensorDiff& tensor) {
  pair.overall.merge(tensor.stats);
  pair.groups[tensor.group].merge(tensor.stats);
  if (auto layer = tensor_layer(tensor.name)) pair.layers[*layer].merge(tensor.stats);
}

TensorDiff compare(const Checkpoint& base, const TensorRecord& a, const Checkpoint& other, const TensorRecord& b,
                   const DiffOptions& options, const ComputeDevice& device) {
  const std::string& name = a.torch_name.value_or(a.name);
  TensorDiff diff{
      .name = name, .group = tensor_group(name), .base_dtype = a.dtype, .other_dtype = b.dtype, .shape = a.shape};
  diff.numeric = dtype_kind(a.dtype) == DTypeKind::kFloat && dtype_kind(b.dtype) == DTypeKind::kFloat;
  if (diff.numeric) {
    at::Tensor other_values = load_tensor(other, b);
    if (transposed_kernel(a, b)) other_values = other_values.t();
    diff.stats = diff_tensors(load_tensor(base, a), other_values, options, device);
  } else {  // integers and unanalyzable dtypes: equal bytes or not
    auto bytes_a = base.files[a.file]->view(a.offset, a.storage_nbytes);
    auto bytes_b = other.files[b.file]->view(b.offset, b.storage_nbytes);
    diff.stats.numel = a.numel;
    diff.stats.identical = a.dtype == b.dtype && a.stride.empty() && b.stride.empty() && a.nbytes == b.nbytes &&
                           std::equal(bytes_a.begin() + a.storage_offset * (dtype_bits(a.dtype) / 8),
                                      bytes_a.begin() + a.storage_offset * (dtype_bits(a.dtype) / 8) + a.nbytes,
                                      bytes_b.begin() + b.storage_offset * (dtype_bits(b.dtype) / 8));
  }
  base.files[a.file]->release(a.offset, a.storage_nbytes);
  other.files[b.file]->release(b.offset, b.storage_nbytes);
  return diff;
}

}  // namespace

bool PairDiff::changed() const {
  bool values_differ = false;
  for (const TensorDiff& tensor : tensors) values_differ = values_differ || !tensor.stats.identical;
  return values_differ || !missing.empty() || !extra.empty() || !shape_mismatch.empty() || !dtype_mismatch.empty();
}

PairDiff diff_checkpoints(const Checkpoint& base, const Checkpoint& other, const TensorFilter& filter,
                          const DiffOptions& options, const ComputeDevice& device) {
  PairDiff pair;
  auto base_tensors = model_tensors(base, filter), other_tensors = model_tensors(other, filter);
  for (const auto& [name, b] : other_tensors)
    if (!base_tensors.count(name)) pair.extra.push_back(name);
  for (const auto& [name, a] : base_tensors) {
    auto found = other_tensors.find(name);
    if (found == other_tensors.end()) {
      pair.missing.push_back(name);
      continue;
    }
    const TensorRecord& b = *found->second;
    if (a->shape != b.shape && !transposed_kernel(*a, b)) {
      pair.shape_mismatch.push_back({name, fmt::format("{}", a->shape), fmt::format("{}", b.shape)});
      continue;
    }
    if (a->dtype != b.dtype)
      pair.dtype_mismatch.push_back({name, std::string(dtype_name(a->dtype)), std::string(dtype_name(b.dtype))});
    TensorDiff diff = compare(base, *a, other, b, options, device);
    if (diff.numeric) add_to_totals(pair, diff);
    pair.tensors.push_back(std::move(diff));
  }
  return pair;
}

}  // namespace precdetect
