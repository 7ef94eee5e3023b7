#pragma once
/// The tensors a quantized weight is read with (scales, zero points, code maps, states), found by name among a
/// checkpoint's records and marked as quantization state: never weights in the verdict, even where the codes
/// themselves cannot be read. Shared by the schemes of quantize/ that mark them.

#include <string>
#include <unordered_map>
#include <vector>

#include "precdetect/load/tensor_record.h"

namespace precdetect {

/// Each record's index, by name.
using RecordNames = std::unordered_map<std::string, size_t>;

/// The record named `name`, marked as quantization state (TensorRole::kScale); nullptr when absent.
inline TensorRecord* state_part(std::vector<TensorRecord>& tensors, const RecordNames& names, const std::string& name) {
  auto found = names.find(name);
  if (found == names.end()) return nullptr;
  TensorRecord& record = tensors[found->second];
  record.role = TensorRole::kScale;
  record.role_from_file = true;
  return &record;
}

}  // namespace precdetect
