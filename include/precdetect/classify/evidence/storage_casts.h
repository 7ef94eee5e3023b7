#pragma once
/// Storage-cast evidence: whether F32/F64 tensors hold only values of a narrower format, i.e. were cast up from
/// it when the file was written. It says how the file was written, not how the model was trained, and is kept
/// apart from the range evidence the verdict rests on.

#include <cstdint>
#include <optional>
#include <string>

#include "precdetect/kernel/tensor_stats.h"

namespace precdetect {

struct StorageCast {
  uint64_t wide_values = 0;  ///< non-NaN values of F32/F64 tensors (TensorStats::exactness_checked)
  double bf16_exact = 0.0;   ///< fraction of them exactly representable in bf16
  double fp16_exact = 0.0;   ///< ... in fp16
  std::string says;          ///< one sentence a person can act on
};

/// nullopt when the summary holds no F32/F64 values.
std::optional<StorageCast> storage_cast(const TensorStats& totals);

}  // namespace precdetect
