// CI gates and the run's exit status, on reports built by hand.
#include "precdetect/app/gates.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace precdetect {
namespace {

std::vector<std::string> reasons(const std::vector<GateFailure>& failures) {
  std::vector<std::string> reasons;
  reasons.reserve(failures.size());
  for (const GateFailure& failure : failures) reasons.push_back(failure.reason);
  return reasons;
}

ModelReport scanned(Label label, double abs_max, double norm_max) {
  ModelReport model{.input = "m", .path = "m"};
  model.summary.has_values = model.summary.has_nonzero_norm = true;
  model.summary.abs_max = abs_max;
  model.summary.norm_max = norm_max;
  model.verdict.label = label;
  return model;
}

TEST(Gates, EachGateSaysWhatItFoundAndWhichFlag) {
  ModelReport model = scanned(Label::kBf16, 300, 2e3);
  model.verdict.fp16_risk_reasons = {{.kind = Fp16RiskKind::kOverflow,
                                      .tensor = "bn.running_var",
                                      .role = TensorRole::kBuffer,
                                      .value = 7e4,
                                      .values = 1}};
  Gates gates{.expect = Label::kFp16,
              .fail_on = {Label::kBf16, Label::kFp32},
              .fail_if_fp16_risk = true,
              .max_abs = 100,
              .max_norm = 5e3};
  EXPECT_EQ(
      reasons(gate_failures(model, gates)),
      (std::vector<std::string>{"classified bf16, expected fp16 (--expect)", "classified bf16 (--fail-on bf16,fp32)",
                                "at risk in fp16: overflow in 1 tensor (buffer bn.running_var 7.000e+04) "
                                "(--fail-if-fp16-risk)",
                                "abs max 300 exceeds 100 (--max-abs)"}));
}

// Each failure names its gate (SARIF's `gate/<name>` rules, JUnit's test cases), and the gates a run checks are
// listed whether or not a model fails them.
TEST(Gates, EachFailureNamesItsGateAndTheCheckedGatesAreListedInFlagOrder) {
  ModelReport model = scanned(Label::kBf16, 300, 2e3);
  Gates gates{.expect = Label::kFp16, .max_abs = 100, .max_norm = 5e3, .fail_if_nonfinite = true};
  std::vector<Gate> failed;
  for (const GateFailure& failure : gate_failures(model, gates)) failed.push_back(failure.gate);
  EXPECT_EQ(failed, (std::vector<Gate>{Gate::kExpect, Gate::kMaxAbs}));
  EXPECT_EQ(checked_gates(gates),
            (std::vector<Gate>{Gate::kExpect, Gate::kMaxAbs, Gate::kMaxNorm, Gate::kFailIfNonfinite}));
  EXPECT_TRUE(checked_gates(Gates{}).empty());
  EXPECT_EQ(fmt::format("{}", Gate::kFailIfFp16Risk), "fail-if-fp16-risk");
}

TEST(Gates, NonFiniteTensorsAreNamedTheFirstFiveAndCounted) {
  ModelReport model = scanned(Label::kFp16OrFp32, 1, 1);
  for (int i = 0; i < 7; ++i) {
    TensorStats stats;
    stats.nans = i == 0 ? 0 : static_cast<uint64_t>(i);  // the first tensor is finite
    stats.infs = i == 6 ? 2 : 0;
    model.tensors.push_back({.name = "t" + std::to_string(i), .dtype = DType::F32, .stats = stats});
  }
  EXPECT_TRUE(gate_failures(model, Gates{}).empty());
  EXPECT_EQ(reasons(gate_failures(model, Gates{.fail_if_nonfinite = true})),
            (std::vector<std::string>{"6 tensor(s) hold NaN or Inf: t1 (1 NaN, 0 Inf), t2 (2 NaN, 0 Inf), t3 (3 NaN, "
                                      "0 Inf), t4 (4 NaN, 0 Inf), t5 (5 NaN, 0 Inf) and 1 more "
                                      "(--fail-if-nonfinite)"}));
}

// A two-label verdict (the ranges could not decide) meets only an expectation that holds both of its labels, and
// fails --fail-on for either of them: a gate never reads more into a verdict than its evidence says.
TEST(Gates, ATwoLabelVerdictMeetsOnlyWhatHoldsBothLabelsAndFailsOnEither) {
  ModelReport open = scanned(Label::kBf16OrFp32, 300, 2e3);
  EXPECT_EQ(reasons(gate_failures(open, {.expect = Label::kBf16})),
            std::vector<std::string>{"classified bf16|fp32, expected bf16 (--expect)"});
  EXPECT_TRUE(gate_failures(open, {.expect = Label::kBf16OrFp32}).empty());
  EXPECT_EQ(reasons(gate_failures(open, {.fail_on = {Label::kFp32}})),
            std::vector<std::string>{"classified bf16|fp32 (--fail-on fp32)"});
  EXPECT_TRUE(gate_failures(open, {.fail_on = {Label::kFp16, Label::kUnknown}}).empty());
  ModelReport decided = scanned(Label::kBf16, 300, 2e3);
  EXPECT_TRUE(gate_failures(decided, {.expect = Label::kBf16OrFp32}).empty());
  ModelReport unknown = scanned(Label::kUnknown, 0, 0);
  EXPECT_FALSE(gate_failures(unknown, {.expect = Label::kBf16OrFp32}).empty());
  EXPECT_TRUE(gate_failures(unknown, {.fail_on = {Label::kFp16}}).empty());
  EXPECT_FALSE(gate_failures(unknown, {.fail_on = {Label::kUnknown}}).empty());
}

TEST(Labels, TwoLabelValuesJoinAndContainTheirPrecisions) {
  EXPECT_EQ(joined_label(std::vector{Label::kFp16, Label::kFp32}), Label::kFp16OrFp32);
  EXPECT_EQ(joined_label(std::vector{Label::kFp32, Label::kBf16}), Label::kBf16OrFp32);
  EXPECT_EQ(joined_label(std::vector{Label::kBf16}), Label::kBf16);
  EXPECT_EQ(joined_label(std::vector{Label::kFp16, Label::kBf16, Label::kFp32}), Label::kUnknown);
  EXPECT_EQ(joined_label(std::vector<Label>{}), Label::kUnknown);
  EXPECT_TRUE(is_within(Label::kFp16, Label::kFp16OrFp32));
  EXPECT_FALSE(is_within(Label::kFp16OrFp32, Label::kFp16));
  EXPECT_FALSE(is_within(Label::kUnknown, Label::kFp16OrFp32));
  EXPECT_TRUE(shares_precision(Label::kFp16OrFp32, Label::kBf16OrFp32));
  EXPECT_FALSE(shares_precision(Label::kFp16OrBf16, Label::kFp32));
  for (Label label : kLabels) EXPECT_EQ(parse_label(label_name(label)), label);
}

TEST(Gates, AFailedModelOrAMissingStatisticViolatesNoGate) {
  ModelReport failed = scanned(Label::kUnknown, 0, 0);
  failed.error = ModelError{ErrorCode::kIo, "m: gone"};
  EXPECT_TRUE(gate_failures(failed, {.expect = Label::kFp16}).empty());
  ModelReport no_values = scanned(Label::kUnknown, 0, 0);
  no_values.summary.has_values = no_values.summary.has_nonzero_norm = false;
  EXPECT_TRUE(gate_failures(no_values, {.max_abs = 1, .max_norm = 1}).empty());
}

TEST(Gates, AGateFailureWinsOverAModelThatCouldNotBeScanned) {
  BatchCounts counts;
  EXPECT_EQ(batch_exit_code(counts), ExitCode::kSuccess);
  counts.add(true, Label::kUnknown, false);
  EXPECT_EQ(batch_exit_code(counts), ExitCode::kModelFailed);
  counts.add(false, Label::kBf16, true);
  EXPECT_EQ(batch_exit_code(counts), ExitCode::kGateFailed);
  EXPECT_EQ(counts.labels, (std::map<Label, size_t>{{Label::kBf16, 1}}));
}

}  // namespace
}  // namespace precdetect
