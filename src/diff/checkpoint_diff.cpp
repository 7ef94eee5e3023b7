#include "precdetect/diff/checkpoint_diff.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "precdetect/analyze/tensor_groups.h"
#include "precdetect/load/record_values.h"
#include "precdetect/load/torch_layout.h"

namespace precdetect {
namespace {

/// The tensors compared, by the name PyTorch gives them: a Flax path or a llama.cpp name is paired by its
/// torch_name, so a Flax or GGUF file and the safetensors it was converted from are compared tensor by tensor.
std::map<std::string, const TensorRecord*> model_tensors(const Checkpoint& checkpoint, const TensorFilter& filter) {
  std::map<std::string, const TensorRecord*> tensors;
  for (const TensorRecord& record : checkpoint.tensors)
    if (record.role != TensorRole::kOptimizer && record.counted && filter.selects(record.name))
      tensors.emplace(record.torch_name.value_or(record.name), &record);
  return tensors;
}

void add_to_totals(PairDiff& pair, const TensorDiff& tensor) {
  pair.overall.merge(tensor.stats);
  pair.groups[tensor.group].merge(tensor.stats);
  if (auto layer = tensor_layer(tensor.name)) pair.layers[*layer].merge(tensor.stats);
}

TensorDiff compare(const Checkpoint& base, const TensorRecord& a, const Checkpoint& other, const TensorRecord& b,
                   const DiffOptions& options, const ComputeDevice& device) {
  const std::string& name = a.torch_name.value_or(a.name);
  TensorDiff diff{.name = name,
                  .group = tensor_group(name),
                  .base_dtype = a.dtype,
                  .other_dtype = b.dtype,
                  .shape = torch_shape(a)};
  diff.numeric = dtype_kind(a.dtype) == DTypeKind::kFloat && dtype_kind(b.dtype) == DTypeKind::kFloat;
  if (diff.numeric) {  // each side as PyTorch holds it: a Flax kernel transposed, llama.cpp's q and k deinterleaved
    diff.stats = diff_values(to_torch_layout(read_values(base, a), a), to_torch_layout(read_values(other, b), b),
                             options, device);
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

std::string_view outcome_name(DiffOutcome outcome) {
  switch (outcome) {
    case DiffOutcome::kIdentical:
      return "identical";
    case DiffOutcome::kLossless:
      return "lossless";
    case DiffOutcome::kChanged:
      return "changed";
  }
  return "changed";
}

DiffOutcome TensorDiff::outcome() const {
  if (stats.identical) return DiffOutcome::kIdentical;
  bool equal_numbers = numeric && stats.not_close == 0 && stats.max_abs == 0;
  return equal_numbers ? DiffOutcome::kLossless : DiffOutcome::kChanged;
}

DiffOutcome PairDiff::outcome() const {
  if (!changed()) return DiffOutcome::kIdentical;
  bool kept = missing.empty() && extra.empty() && shape_mismatch.empty() && not_compared.empty();
  for (const TensorDiff& tensor : tensors) kept = kept && tensor.outcome() != DiffOutcome::kChanged;
  return kept ? DiffOutcome::kLossless : DiffOutcome::kChanged;
}

bool PairDiff::changed() const {
  bool values_differ = false;
  for (const TensorDiff& tensor : tensors) values_differ = values_differ || !tensor.stats.identical;
  return values_differ || !missing.empty() || !extra.empty() || !computed_from_config.empty() ||
         !shape_mismatch.empty() || !dtype_mismatch.empty() || !not_compared.empty();
}

PairDiff diff_checkpoints(const Checkpoint& base, const Checkpoint& other, const TensorFilter& filter,
                          const DiffOptions& options, const ComputeDevice& device) {
  PairDiff pair;
  auto base_tensors = model_tensors(base, filter), other_tensors = model_tensors(other, filter);
  for (const auto& [name, b] : other_tensors)
    if (!base_tensors.count(name)) (b->computed_from_config ? pair.computed_from_config : pair.extra).push_back(name);
  for (const auto& [name, a] : base_tensors) {
    auto found = other_tensors.find(name);
    if (found == other_tensors.end()) {
      (a->computed_from_config ? pair.computed_from_config : pair.missing).push_back(name);
      continue;
    }
    const TensorRecord& b = *found->second;
    if (a->sparse_of || b.sparse_of) {  // values at indices against a dense tensor: no kernel of ours compares them
      pair.not_compared.push_back(name);
      continue;
    }
    if (torch_shape(*a) != torch_shape(b)) {
      pair.shape_mismatch.push_back({name, fmt::format("{}", torch_shape(*a)), fmt::format("{}", torch_shape(b))});
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
