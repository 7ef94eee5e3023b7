#include "precdetect/classify/evidence/cast_risks.h"

#include "precdetect/analyze/cast_safety.h"

namespace precdetect {

std::vector<Fp16RiskReason> cast_risks(const AnalyzedTensor& tensor) {
  std::vector<Fp16RiskReason> risks;
  // Optimizer state is not cast with the model; quantization scales stay in their own dtype when it is.
  if (!tensor.stats || !tensor.counted || tensor.role == TensorRole::kOptimizer || tensor.role == TensorRole::kScale)
    return risks;
  const TensorStats& stats = *tensor.stats;
  FormatFit fit = format_fit(stats, kFp16Format);
  if (fit.overflow > 0)
    risks.push_back({.kind = Fp16RiskKind::kOverflow,
                     .tensor = tensor.name,
                     .role = tensor.role,
                     .value = stats.abs_max,
                     .values = fit.overflow});
  uint64_t nonzero_finite = stats.numel - stats.zeros - stats.nans - stats.infs;
  // "En masse": more than half of the tensor's non-zero values; a few tiny values lost to rounding are not a risk.
  if (fit.underflow > 0 && 2 * fit.underflow > nonzero_finite)
    risks.push_back({.kind = Fp16RiskKind::kFlushToZero,
                     .tensor = tensor.name,
                     .role = tensor.role,
                     .value = static_cast<double>(fit.underflow) / static_cast<double>(nonzero_finite),
                     .values = fit.underflow});
  return risks;
}

std::vector<Fp16RiskReason> cast_risks(std::span<const AnalyzedTensor> tensors) {
  std::vector<Fp16RiskReason> risks;
  for (const AnalyzedTensor& tensor : tensors)
    for (Fp16RiskReason& reason : cast_risks(tensor)) risks.push_back(std::move(reason));
  return risks;
}

}  // namespace precdetect
