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
  /// the model or its base is documented as bf16-pretrained (activations outgrow fp16: T5's do), or its
  /// architecture's fp16 failure is documented by its authors or a serving framework (documented_fp16_failures.h)
  kDocumented,
  kActivation,  ///< a forward pass measured a module's output or input beyond fp16's largest value (the probe)
};

/// "range", "overflow", "flush_to_zero", "documented", "activation".
std::string_view risk_kind_name(Fp16RiskKind kind);

struct Fp16RiskReason {
  Fp16RiskKind kind = Fp16RiskKind::kRange;
  /// the tensor; for kRange the parameter holding the rule's statistic (empty if none); for kActivation the module
  std::string tensor;
  TensorRole role = TensorRole::kModel;
  /// kRange: the rule's observed statistic; kOverflow: the tensor's abs max; kFlushToZero: the fraction of its
  /// non-zero finite values that become 0; kActivation: the largest magnitude measured
  double value = 0.0;
  uint64_t values = 0;  ///< kOverflow, kFlushToZero: how many values
  std::string rule;     ///< kRange: the rule that fired; kDocumented: the registry or fp16-failure entry's id
  /// kDocumented: a documented fp16 failure's source; empty for a documented bf16 pretraining, whose entry the
  /// verdict's `documented` holds
  std::string source;
};

}  // namespace precdetect
