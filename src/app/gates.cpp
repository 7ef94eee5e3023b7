#include "precdetect/app/gates.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "precdetect/report/verdict_text.h"

namespace precdetect {

std::vector<std::string> gate_failures(const ModelReport& model, const Gates& gates) {
  std::vector<std::string> failures;
  if (model.error) return failures;
  const std::string& label = model.verdict.label;
  const ModelSummary& summary = model.summary;
  if (gates.expect && label != *gates.expect)
    failures.push_back(fmt::format("classified {}, expected {} (--expect)", label, *gates.expect));
  if (std::find(gates.fail_on.begin(), gates.fail_on.end(), label) != gates.fail_on.end())
    failures.push_back(fmt::format("classified {} (--fail-on {})", label, fmt::join(gates.fail_on, ",")));
  if (gates.fail_if_fp16_risk && model.verdict.fp16_risk)
    failures.push_back(fmt::format("at risk in fp16: {} (--fail-if-fp16-risk)", risk_reasons_text(model.verdict)));
  if (gates.max_abs && summary.has_values && summary.abs_max > *gates.max_abs)
    failures.push_back(fmt::format("abs max {:.4g} exceeds {:.4g} (--max-abs)", summary.abs_max, *gates.max_abs));
  if (gates.max_norm && summary.has_nonzero_norm && summary.norm_max > *gates.max_norm)
    failures.push_back(fmt::format("norm max {:.4g} exceeds {:.4g} (--max-norm)", summary.norm_max, *gates.max_norm));
  return failures;
}

ExitCode batch_exit_code(const BatchCounts& counts) {
  if (counts.gate_failed) return ExitCode::kGateFailed;
  return counts.failed ? ExitCode::kError : ExitCode::kSuccess;
}

}  // namespace precdetect
