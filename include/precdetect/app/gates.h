#pragma once
/// CI gates: checks a scanned model against --expect, --fail-on, --fail-if-fp16-risk, --max-abs, --max-norm.

#include <string>
#include <vector>

#include "precdetect/app/options.h"
#include "precdetect/report/batch_counts.h"
#include "precdetect/report/report.h"

namespace precdetect {

/// One line per violated gate, saying what was found and which flag it violates; empty when all pass. A model
/// that could not be scanned is judged by its error, never by gates, except --fail-if-unsafe: its safety was
/// examined all the same. A bound on a statistic the model does not
/// have (no floating tensors) is not violated.
std::vector<std::string> gate_failures(const ModelReport& model, const Gates& gates);

/// The run's exit status from what its models came to (scan and merge alike): a gate failure wins over a model
/// that could not be scanned.
ExitCode batch_exit_code(const BatchCounts& counts);

}  // namespace precdetect
