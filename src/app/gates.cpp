#include "precdetect/app/gates.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "precdetect/classify/stat.h"
#include "precdetect/report/verdict_text.h"

namespace precdetect {
namespace {

/// A --max-abs / --max-norm bound, read off the summary through the stat table (a model without the statistic
/// does not violate it).
std::optional<std::string> bound_failure(const ModelSummary& summary, Stat stat, std::optional<double> bound,
                                         std::string_view flag, std::string_view what) {
  std::optional<double> observed = stat_def(stat).read(summary);
  if (!bound || !observed || *observed <= *bound) return std::nullopt;
  return fmt::format("{} {:.4g} exceeds {:.4g} ({})", what, *observed, *bound, flag);
}

/// --fail-if-unsafe (and --strict-safety): judged on every model, failed ones too, since an unsafe pickle is
/// often why a model could not be read.
std::optional<std::string> safety_failure(const ModelReport& model, const Gates& gates) {
  if (!gates.fail_if_unsafe) return std::nullopt;
  if (!model.safety) {
    if (!gates.strict_safety) return std::nullopt;
    return "nothing could be examined (--fail-if-unsafe --strict-safety)";
  }
  SafetyVerdict verdict = model.safety->verdict();
  if (verdict == SafetyVerdict::kUnsafe || (gates.strict_safety && verdict == SafetyVerdict::kUnverified))
    return fmt::format("{} (--fail-if-unsafe{})", safety_text(*model.safety),
                       gates.strict_safety ? " --strict-safety" : "");
  return std::nullopt;
}

constexpr size_t kNamedTensors = 5;

/// --fail-if-nonfinite: every tensor that holds NaN or Inf, buffers too (a NaN running_var breaks the model as
/// surely as a NaN weight), named, the first few of them.
std::optional<std::string> nonfinite_failure(const ModelReport& model, const Gates& gates) {
  if (!gates.fail_if_nonfinite) return std::nullopt;
  std::vector<std::string> named;
  size_t tensors = 0;
  for (const TensorReport& tensor : model.tensors) {
    if (!tensor.counted || !tensor.stats || tensor.stats->nans + tensor.stats->infs == 0) continue;  // tied: once
    if (++tensors <= kNamedTensors)
      named.push_back(fmt::format("{} ({} NaN, {} Inf)", tensor.name, tensor.stats->nans, tensor.stats->infs));
  }
  if (tensors == 0) return std::nullopt;
  std::string more = tensors > kNamedTensors ? fmt::format(" and {} more", tensors - kNamedTensors) : "";
  return fmt::format("{} tensor(s) hold NaN or Inf: {}{} (--fail-if-nonfinite)", tensors, fmt::join(named, ", "), more);
}

}  // namespace

bool meets_expectation(Label label, Label expected) { return label == expected || is_within(label, expected); }

bool may_be(Label label, Label bad) { return label == bad || shares_precision(label, bad); }

std::vector<GateFailure> gate_failures(const ModelReport& model, const Gates& gates) {
  std::vector<GateFailure> failures;
  auto add = [&](Gate gate, std::optional<std::string> reason) {
    if (reason) failures.push_back({.gate = gate, .reason = std::move(*reason)});
  };
  add(Gate::kFailIfUnsafe, safety_failure(model, gates));
  if (gates.verify) {               // a model that could not be read too: a damaged file is often why
    Confined confined(model.root);  // a link out of the model is not hashed: its hash would tell of the file
    for (GateFailure& failure : verify_files(model.files, *gates.verify, model.streamed_digests))
      failures.push_back(std::move(failure));
  }
  if (model.error) return failures;
  Label label = model.verdict.label;
  const ModelSummary& summary = model.summary;
  if (gates.expect && !meets_expectation(label, *gates.expect))
    add(Gate::kExpect, fmt::format("classified {}, expected {} (--expect)", label, *gates.expect));
  if (std::any_of(gates.fail_on.begin(), gates.fail_on.end(), [&](Label bad) { return may_be(label, bad); }))
    add(Gate::kFailOn, fmt::format("classified {} (--fail-on {})", label, fmt::join(gates.fail_on, ",")));
  if (gates.fail_if_fp16_risk && model.verdict.fp16_risk())
    add(Gate::kFailIfFp16Risk,
        fmt::format("at risk in fp16: {} (--fail-if-fp16-risk)", risk_reasons_text(model.verdict)));
  add(Gate::kMaxAbs, bound_failure(summary, Stat::kAbsMax, gates.max_abs, "--max-abs", "abs max"));
  add(Gate::kMaxNorm, bound_failure(summary, Stat::kNormMax, gates.max_norm, "--max-norm", "norm max"));
  add(Gate::kFailIfNonfinite, nonfinite_failure(model, gates));
  return failures;
}

std::vector<Gate> checked_gates(const Gates& gates) {
  std::vector<Gate> checked;
  auto check = [&](bool given, Gate gate) {
    if (given) checked.push_back(gate);
  };
  check(gates.expect.has_value(), Gate::kExpect);
  check(!gates.fail_on.empty(), Gate::kFailOn);
  check(gates.fail_if_fp16_risk, Gate::kFailIfFp16Risk);
  check(gates.max_abs.has_value(), Gate::kMaxAbs);
  check(gates.max_norm.has_value(), Gate::kMaxNorm);
  check(gates.fail_if_unsafe, Gate::kFailIfUnsafe);
  check(gates.fail_if_nonfinite, Gate::kFailIfNonfinite);
  check(gates.verify.has_value(), Gate::kVerify);
  return checked;
}

ExitCode batch_exit_code(const BatchCounts& counts) {
  if (counts.gate_failed) return ExitCode::kGateFailed;
  return counts.failed ? ExitCode::kModelFailed : ExitCode::kSuccess;
}

}  // namespace precdetect
