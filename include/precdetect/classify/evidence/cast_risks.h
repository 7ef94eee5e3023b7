#pragma once
/// Cast risks as verdict evidence: what casting a tensor to fp16 as stored breaks (model.half() casts parameters
/// and buffers alike, so every such tensor counts).

#include <span>
#include <vector>

#include "precdetect/analyze/analyzed_tensor.h"
#include "precdetect/classify/fp16_risk.h"

namespace precdetect {

/// What casting `tensor` (a parameter or buffer) to fp16 as stored would break: finite values above 65504 (an
/// `overflow` reason), most of its non-zero values below fp16's smallest subnormal (`flush_to_zero`). Empty when
/// nothing breaks, or when the tensor is optimizer state, a second name of a tied tensor, or was not analyzed.
std::vector<Fp16RiskReason> cast_risks(const AnalyzedTensor& tensor);

/// Every tensor's cast risks, in the tensors' order.
std::vector<Fp16RiskReason> cast_risks(std::span<const AnalyzedTensor> tensors);

}  // namespace precdetect
