#pragma once
/// fp16 risk answers "does this checkpoint break in fp16?", a second question beside the verdict's "was it
/// pretrained in a wider range?": model.half() casts parameters and buffers alike, so every such tensor counts.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "precdetect/analyze/analyzed_tensor.h"

namespace precdetect {

enum class Fp16RiskKind {
  kRange,        ///< a range rule says the parameters were learned wider than fp16 holds
  kOverflow,     ///< finite values above 65504 become inf when the tensor is cast
  kFlushToZero,  ///< most of a tensor's non-zero values fall below fp16's smallest subnormal and become 0
  kDocumented,   ///< the model or its base is documented as bf16-pretrained: activations outgrow fp16 (T5's do)
};

/// "range", "overflow", "flush_to_zero", "documented".
std::string_view risk_kind_name(Fp16RiskKind kind);

struct Fp16RiskReason {
  Fp16RiskKind kind = Fp16RiskKind::kRange;
  std::string tensor;  ///< the tensor; for kRange the parameter holding the rule's statistic (empty if none)
  TensorRole role = TensorRole::kModel;
  /// kRange: the rule's observed statistic; kOverflow: the tensor's abs max; kFlushToZero: the fraction of its
  /// non-zero finite values that become 0
  double value = 0.0;
  uint64_t values = 0;  ///< kOverflow, kFlushToZero: how many values
  std::string rule;     ///< kRange: the rule that fired; kDocumented: the registry id
};

/// What casting `tensor` (a parameter or buffer) to fp16 as stored would break; empty when nothing (or when the
/// tensor is optimizer state, a second name of a tied tensor, or was not analyzed).
std::vector<Fp16RiskReason> cast_risks(const AnalyzedTensor& tensor);

}  // namespace precdetect
