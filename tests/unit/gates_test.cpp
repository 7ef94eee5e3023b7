// CI gates and the run's exit status, on reports built by hand.
#include "precdetect/app/gates.h"

#include <gtest/gtest.h>

namespace precdetect {
namespace {

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
      gate_failures(model, gates),
      (std::vector<std::string>{"classified bf16, expected fp16 (--expect)", "classified bf16 (--fail-on bf16,fp32)",
                                "at risk in fp16: overflow in 1 tensor (buffer bn.running_var 7.000e+04) "
                                "(--fail-if-fp16-risk)",
                                "abs max 300 exceeds 100 (--max-abs)"}));
}

TEST(Gates, AFailedModelOrAMissingStatisticViolatesNoGate) {
  ModelReport failed = scanned(Label::kUnknown, 0, 0);
  failed.error = ModelError{"io_error", "m: gone"};
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
