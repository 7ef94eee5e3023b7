#include "precdetect/app/check.h"

#include <fmt/format.h>

#include "precdetect/app/gates.h"
#include "precdetect/core/error.h"

namespace precdetect {

ModelReport check_live_model(const LiveModel& model, const LiveModelInfo& info, const ScanOptions& options,
                             const Judgement& judgement) {
  ModelReport report{.input = info.name, .path = info.name, .format = info.format, .warnings = model.warnings};
  try {
    take_analysis(report, analyze_live_model(model, info.name, options.filter, judgement.rules.buffers));
    report.verdict = judge({.summary = report.summary,
                            .tensors = report.tensors,
                            .identity = identify_live_model(info.config),
                            .activations = info.activations},
                           judgement);
  } catch (const Error& e) {
    fail_model(report, {e.code(), e.what()});
  } catch (const std::exception& e) {
    fail_model(report, {ErrorCode::kInternal, fmt::format("{}: {}", info.name, e.what())});
  }
  report.gate_failures = gate_failures(report, options.gates);
  return report;
}

}  // namespace precdetect
