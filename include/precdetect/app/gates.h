#pragma once
/// CI gates: checks a scanned model against --expect, --fail-on, --fail-if-fp16-risk, --max-abs, --max-norm,
/// --fail-if-unsafe, --fail-if-nonfinite, --verify.

#include <string>
#include <vector>

#include "precdetect/app/options.h"
#include "precdetect/report/batch_counts.h"
#include "precdetect/report/report.h"

namespace precdetect {

/// --expect: the verdict is `expected`, or leaves open only precisions `expected` does: --expect bf16|fp32 accepts
/// bf16, fp32 and bf16|fp32; --expect bf16 accepts bf16 alone, not a bf16|fp32 the ranges could not decide.
bool meets_expectation(Label label, Label expected);

/// --fail-on: the verdict is `bad`, or leaves a precision of it open: --fail-on fp16 fails fp16 and fp16|fp32,
/// the models the evidence does not clear of fp16.
bool may_be(Label label, Label bad);

/// One failure per violated gate (one per file for --verify), saying what was found and which flag it violates; empty
/// when all pass. A model that could not be scanned is judged by its error, never by gates, except --fail-if-unsafe
/// (its safety was examined all the same) and --verify (its files were found). A bound on a statistic the model does
/// not have (no floating tensors) is not violated.
std::vector<GateFailure> gate_failures(const ModelReport& model, const Gates& gates);

/// The gates `gates` asks for, in Gate's order: what JUnit reports as passed where a model did not fail them.
std::vector<Gate> checked_gates(const Gates& gates);

/// The run's exit status from what its models came to (scan and merge alike): a gate failure wins over a model
/// that could not be scanned.
ExitCode batch_exit_code(const BatchCounts& counts);

}  // namespace precdetect
