// The built-in rules on seed 000's table, and the rules file's validation.
#include "precdetect/classify/judge.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "precdetect/classify/evidence/documented_precision.h"
#include "precdetect/core/error.h"

namespace precdetect {
namespace {

struct SeedRow {
  const char* model;
  const char* group;  // the training precision seed 000 lists the model under
  double abs_min, abs_max, norm_min, norm_max;
};

// The 23 rows of seed 000's results table (../shared/seeds/000), as printed there.
constexpr SeedRow kSeedTable[] = {
    {"allenai/longformer-base-4096", "fp16", 0.000e+00, 1.510e+00, 2.272e-02, 7.993e+02},
    {"allenai/longformer-large-4096", "fp16", 0.000e+00, 1.146e+00, 9.087e-02, 9.428e+02},
    {"allenai/led-base-16384", "fp16", 0.000e+00, 1.600e+01, 1.611e-02, 4.147e+02},
    {"allenai/led-large-16384", "fp16", 0.000e+00, 2.320e+01, 4.799e-02, 6.362e+02},
    {"lvwerra/codeparrot", "fp16", 1.245e-11, 1.832e+00, 1.185e-01, 2.112e+02},
    {"facebook/m2m100_418M", "fp16", 0.000e+00, 1.000e+00, 4.792e-01, 4.829e+02},
    {"facebook/m2m100_1.2B", "fp16", 0.000e+00, 1.000e+00, 4.835e-01, 4.925e+02},
    {"facebook/opt-1.3b", "fp16", 0.000e+00, 1.000e+00, 4.852e-02, 3.619e+02},
    {"facebook/opt-13b", "fp16", 0.000e+00, 1.000e+00, 7.830e-02, 3.136e+02},
    {"t5-small", "bf16", 5.442e-09, 7.920e+02, 1.780e+00, 9.403e+04},
    {"t5-base", "bf16", 1.273e-10, 5.600e+02, 1.647e+00, 9.332e+04},
    {"t5-large", "bf16", 3.638e-11, 5.200e+02, 3.797e+00, 8.237e+04},
    {"google/mt5-small", "bf16", 3.201e-09, 1.140e+02, 2.662e+00, 1.610e+05},
    {"google/mt5-base", "bf16", 1.848e-09, 1.135e+02, 3.445e+00, 1.639e+05},
    {"google/mt5-large", "bf16", 1.892e-10, 1.750e+02, 4.472e+00, 2.029e+05},
    {"google/bigbird-pegasus-large-arxiv", "bf16", 0.000e+00, 2.424e+02, 4.955e-01, 3.183e+03},
    {"google/pegasus-cnn_dailymail", "bf16", 0.000e+00, 2.416e+02, 4.926e-01, 4.423e+03},
    {"google/pegasus-large", "bf16", 0.000e+00, 2.417e+02, 4.912e-01, 4.745e+03},
    {"gsarti/it5-small", "fp32", 6.114e-08, 4.693e+02, 8.411e-02, 6.881e+04},
    {"gsarti/it5-base", "fp32", 1.068e-08, 1.598e+03, 3.596e-01, 8.997e+04},
    {"gsarti/it5-base-oscar", "fp32", 3.638e-12, 2.092e+01, 3.637e+00, 5.758e+03},
    {"gsarti/it5-large", "fp32", 2.094e-09, 4.388e+04, 7.982e-02, 1.105e+06},
    {"EleutherAI/gpt-neo-2.7B", "fp32", 2.319e-11, 3.563e+00, 1.322e+00, 9.850e+02},
};

/// The verdict on `summary` alone: no tensors, records or identity.
Verdict judged(const ModelSummary& summary, const RuleSet& rules, const ModelIdentity& identity = {},
               std::span<const TrainingRecord> records = {}) {
  return judge({.summary = summary, .identity = identity, .records = records}, {rules, default_registry()});
}

ModelSummary summary_of(const SeedRow& row) {
  ModelSummary summary;
  summary.abs_min = row.abs_min;
  summary.abs_max = row.abs_max;
  summary.norm_min = row.norm_min;
  summary.norm_max = row.norm_max;
  summary.has_values = summary.has_nonzero_norm = true;
  return summary;
}

TEST(Classifier, SeedTableHasItsTwentyThreeRows) { EXPECT_EQ(std::size(kSeedTable), 23u); }

TEST(Classifier, Fp16GroupIsFp16AndSafe) {
  for (const SeedRow& row : kSeedTable) {
    if (std::string(row.group) != "fp16") continue;
    Verdict verdict = judged(summary_of(row), default_rules());
    EXPECT_EQ(verdict.label, Label::kFp16OrFp32) << row.model;  // ranges never decide fp16 alone
    EXPECT_EQ(verdict.candidates.front(), Label::kFp16) << row.model;
    EXPECT_FALSE(verdict.fp16_risk()) << row.model;
    EXPECT_GT(verdict.confidence, 0.5) << row.model;
  }
}

TEST(Classifier, Bf16GroupCarriesFp16Risk) {
  for (const SeedRow& row : kSeedTable) {
    if (std::string(row.group) != "bf16") continue;
    Verdict verdict = judged(summary_of(row), default_rules());
    EXPECT_TRUE(verdict.fp16_risk()) << row.model;
    EXPECT_EQ(verdict.label, Label::kBf16OrFp32) << row.model;
    EXPECT_EQ(verdict.candidates.front(), Label::kBf16) << row.model;
  }
}

// fp32 pretraining is not separable by range (seed 000): it5 looks like bf16, gpt-neo-2.7B like fp16.
TEST(Classifier, Fp32GroupFollowsItsRange) {
  for (const SeedRow& row : kSeedTable) {
    if (std::string(row.group) != "fp32") continue;
    Verdict verdict = judged(summary_of(row), default_rules());
    bool large = row.abs_max > 100 || row.norm_max > 1000;
    EXPECT_EQ(verdict.fp16_risk(), large) << row.model;
  }
}

TEST(Classifier, EvidenceListsEveryRuleWithObservedValues) {
  Verdict verdict = judged(summary_of(kSeedTable[9]), default_rules());  // t5-small
  ASSERT_EQ(verdict.evidence.size(), default_rules().rules.size());
  const RuleEvidence& abs_max_rule = verdict.evidence[1];
  EXPECT_EQ(abs_max_rule.rule, "abs-max-above-1e2");
  EXPECT_TRUE(abs_max_rule.fired);
  ASSERT_EQ(abs_max_rule.observations.size(), 1u);
  EXPECT_EQ(abs_max_rule.observations[0].observed, 792.0);
  EXPECT_EQ(abs_max_rule.observations[0].threshold, 100.0);
  EXPECT_FALSE(verdict.evidence[0].fired);  // 792 < 65504
  EXPECT_FALSE(verdict.evidence[3].fired);  // the fp16-sized rule
  EXPECT_EQ(verdict.label, Label::kBf16OrFp32);
  EXPECT_EQ(verdict.decided_by, VerdictBasis::kRanges);
  EXPECT_DOUBLE_EQ(verdict.confidence, 0.93);  // 12 of 12 labelled models with abs max > 1e2: (12+1)/(12+2)
  EXPECT_NE(verdict.evidence[1].basis.find("12 of 12 labelled models"), std::string::npos);
}

// A range verdict claims its rule's candidates: every row of seed 000's table a rule fires on (this file's own
// copy) was trained in one of them, and the confidence is at least Laplace's (k+1)/(k+2) for those rows alone
// (scripts/calibrate_rules.py --check recounts it exactly from docs/labelled-models.csv, in ctest).
TEST(Classifier, RangeClaimsHoldOnSeedTable) {
  size_t calibrated = 0;
  for (const Rule& rule : default_rules().rules) {
    RuleSet alone{.rules = {rule}};
    size_t fired = 0, within = 0;
    for (const SeedRow& row : kSeedTable) {
      if (judged(summary_of(row), alone).decided_by != VerdictBasis::kRanges) continue;
      ++fired;
      for (Label candidate : rule.candidates) within += label_name(candidate) == row.group;
    }
    if (fired == 0) continue;  // abs-max-above-fp16-max: no labelled model reaches it
    ++calibrated;
    EXPECT_EQ(within, fired) << rule.id;
    EXPECT_LT(rule.confidence, 1.0) << rule.id;
    EXPECT_GE(rule.confidence + 0.005, static_cast<double>(fired + 1) / static_cast<double>(fired + 2)) << rule.id;
  }
  EXPECT_EQ(calibrated, 3u);
}

TEST(Classifier, ValuesBeyondFp16MaxRuleOutFp16) {
  SeedRow row{"huge", "bf16", 0, 7e4, 1, 1e6};
  Verdict verdict = judged(summary_of(row), default_rules());
  EXPECT_EQ(verdict.label, Label::kBf16OrFp32);
  EXPECT_EQ(verdict.candidates, (std::vector<Label>{Label::kBf16, Label::kFp32}));
  EXPECT_TRUE(verdict.evidence[0].fired);
  // No labelled model reaches 65504: the rule takes the count of abs-max-above-1e2, which fires wherever it does.
  EXPECT_DOUBLE_EQ(verdict.confidence, default_rules().rules[1].confidence);
}

TEST(Classifier, NoFloatingValuesIsUnknown) {
  ModelSummary integers;
  integers.census["I64"] = {};
  Verdict verdict = judged(integers, default_rules());
  EXPECT_EQ(verdict.label, Label::kUnknown);
  EXPECT_FALSE(verdict.fp16_risk());
  EXPECT_EQ(verdict.confidence, 0.0);
  EXPECT_EQ(verdict.hints.stored_dtypes, std::vector<std::string>{"I64"});
  EXPECT_FALSE(verdict.evidence[1].observations[0].observed.has_value());
}

TEST(Rules, CustomRulesReplaceTheDefault) {
  RuleSet rules = parse_rules(R"({"rules":[{"id":"tiny","when":[{"stat":"abs_max","op":"<","value":1}],)"
                              R"("label":"fp32","confidence":0.4,"fp16_risk":false}]})",
                              "custom.json");
  Verdict verdict = judged(summary_of({"m", "?", 0, 0.5, 1, 2}), rules);
  EXPECT_EQ(verdict.label, Label::kFp32);
  EXPECT_DOUBLE_EQ(verdict.confidence, 0.4);
}

void expect_invalid(const std::string& text, const std::string& detail) {
  try {
    parse_rules(text, "bad.json");
    FAIL() << "accepted: " << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidRules);
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(detail), std::string::npos) << e.what();
  }
}

TEST(Rules, InvalidRulesAreNamed) {
  const std::string head = R"({"rules":[{"id":"r","when":[{"stat":")";
  expect_invalid(head + R"(weight","op":">","value":1}],"label":"bf16","confidence":1,"fp16_risk":true}]})",
                 "unknown stat");
  expect_invalid(head + R"(abs_max","op":"=","value":1}],"label":"bf16","confidence":1,"fp16_risk":true}]})",
                 "unknown op");
  expect_invalid(head + R"(abs_max","op":">","value":1}],"label":"tf32","confidence":1,"fp16_risk":true}]})", "label");
  expect_invalid(head + R"(abs_max","op":">","value":1}],"label":"bf16","confidence":2,"fp16_risk":true}]})",
                 "confidence");
  expect_invalid(R"({"rules":[]})", "no rules");
  expect_invalid(R"({"rules":[{"id":"r"}]})", "invalid rules file");
  expect_invalid("not json", "invalid rules file");
}

// One definition per word: the stat table is indexed by the enum, and every name parses back to its own entry.
TEST(Vocabulary, EveryStatOpAndLabelRoundTrips) {
  for (size_t i = 0; i < kStats.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(kStats[i].id), i) << kStats[i].key;
    EXPECT_EQ(parse_stat(kStats[i].key), kStats[i].id);
    EXPECT_FALSE(kStats[i].description.empty()) << kStats[i].key;
  }
  for (Op op : {Op::kGreater, Op::kGreaterEqual, Op::kLess, Op::kLessEqual}) EXPECT_EQ(parse_op(op_symbol(op)), op);
  for (Label label : kLabels) EXPECT_EQ(parse_label(label_name(label)), label);
  EXPECT_EQ(parse_stat("above_seed_threshold"), std::nullopt);  // JSON and C++ say above_1e2 alike
  EXPECT_TRUE(holds(2.0, Op::kGreaterEqual, 2.0));
  EXPECT_FALSE(holds(2.0, Op::kLess, 2.0));
}

std::optional<Documented> documented_id(const std::string& id) {
  return find_documented(default_registry(), {.hub_id = id});
}

// The registry and seed 000's table come from different sources (model cards, configs, issues; the notebook):
// every seed row the registry knows must be documented in the seed's own group.
TEST(Registry, AgreesWithTheSeedTablesGroups) {
  size_t known = 0;
  for (const SeedRow& row : kSeedTable) {
    std::optional<Documented> documented = documented_id(row.model);
    if (!documented) continue;
    ++known;
    EXPECT_EQ(label_name(documented->label), row.group) << row.model;
  }
  EXPECT_EQ(known, std::size(kSeedTable));
}

TEST(Registry, ExactIdsBeforePrefixesAndCaseIgnored) {
  Registry registry = parse_registry(R"([
    {"ids": ["google/t5-*"], "precision": "bf16", "grade": "medium", "source": "a"},
    {"ids": ["google/t5-v1_1-*"], "precision": "fp32", "grade": "low", "source": "b"},
    {"ids": ["google/t5-v1_1-base"], "precision": "fp16", "grade": "high", "source": "c"}
  ])",
                                     "test");
  auto label_of = [&](const std::string& id) {
    std::optional<Documented> found = find_documented(registry, {.hub_id = id});
    return found ? found->label : Label::kUnknown;
  };
  EXPECT_EQ(label_of("Google/T5-V1_1-Base"), Label::kFp16);
  EXPECT_EQ(label_of("google/t5-v1_1-large"), Label::kFp32);
  EXPECT_EQ(label_of("google/t5-small"), Label::kBf16);
  EXPECT_EQ(label_of("google/t5"), Label::kUnknown);
  EXPECT_EQ(find_documented(registry, {.hub_id = "google/t5-v1_1-large"})->id, "google/t5-v1_1-large");
}

TEST(Registry, ConfigMatchesReadTheFamiliesOwnKeysAndStepOneGradeDown) {
  ModelIdentity bloom{.config = {{"model_type", "bloom"}, {"n_embed", 14336}, {"n_layer", 70}}};
  std::optional<Documented> found = find_documented(default_registry(), bloom);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, "bigscience/bloom");
  EXPECT_EQ(found->matched_by, MatchKind::kConfig);
  EXPECT_EQ(found->grade, Grade::kMedium);
  EXPECT_DOUBLE_EQ(found->confidence, grade_confidence(Grade::kMedium));
  bloom.config["n_layer"] = 71;
  EXPECT_FALSE(find_documented(default_registry(), bloom));
}

// Evidence order: a record of the fine-tune decides; its base's documented bf16 pretraining is a conflict shown
// beside it, and still an fp16 risk.
TEST(Registry, ARecordOutranksTheDocumentedPrecisionAndTheirConflictIsShown) {
  TrainingRecord fp16_run{.kind = RecordKind::kTrainerArguments, .label = Label::kFp16, .files = {"training_args.bin"}};
  const SeedRow& t5_small = kSeedTable[9];
  ASSERT_STREQ(t5_small.model, "t5-small");
  Verdict verdict = judged(summary_of(t5_small), default_rules(), {.hub_id = "t5-small"}, std::span(&fp16_run, 1));
  EXPECT_EQ(verdict.decided_by, VerdictBasis::kRecords);
  EXPECT_EQ(verdict.label, Label::kFp16);
  ASSERT_EQ(verdict.conflicts.size(), 2u);  // the ranges and the documentation both disagree with the record
  EXPECT_EQ(verdict.conflicts[1].kind, ConflictKind::kRecordNotDocumented);
  EXPECT_NE(std::find(verdict.candidates.begin(), verdict.candidates.end(), Label::kBf16), verdict.candidates.end());
  EXPECT_DOUBLE_EQ(verdict.confidence, 0.5);
  EXPECT_TRUE(std::any_of(verdict.fp16_risk_reasons.begin(), verdict.fp16_risk_reasons.end(),
                          [](const Fp16RiskReason& r) { return r.kind == Fp16RiskKind::kDocumented; }));
}

TEST(Registry, Fp8TrainingIsShownButNotWeighed) {
  const SeedRow& t5_small = kSeedTable[9];
  Verdict verdict = judged(summary_of(t5_small), default_rules(), {.hub_id = "deepseek-ai/DeepSeek-V3"});
  ASSERT_TRUE(verdict.documented);
  EXPECT_EQ(verdict.documented->precision, Precision::kFp8Mixed);
  EXPECT_EQ(verdict.decided_by, VerdictBasis::kRanges);
}

}  // namespace
}  // namespace precdetect

namespace precdetect {
namespace {

TEST(Gpu, NamesAndComputeCapabilitiesParse) {
  EXPECT_EQ(parse_gpu("T4")->major, 7);
  EXPECT_EQ(parse_gpu("Tesla T4")->minor, 5);
  EXPECT_EQ(parse_gpu("nvidia-a100")->major, 8);
  EXPECT_EQ(parse_gpu("RTX 4090")->minor, 9);
  EXPECT_EQ(parse_gpu("sm_75")->major, 7);
  EXPECT_EQ(parse_gpu("sm_120")->major, 12);
  EXPECT_EQ(parse_gpu("8.6")->minor, 6);
  EXPECT_TRUE(parse_gpu("CPU")->cpu);
  EXPECT_FALSE(parse_gpu("cpu")->bf16());
  EXPECT_FALSE(parse_gpu("V100")->bf16());
  EXPECT_TRUE(parse_gpu("L4")->bf16());
  EXPECT_TRUE(assumed_gpu().bf16());
  for (const char* bad : {"Z80", "", "7", "7.", ".5", "sm_7", "sm_7x", "99.0", "a100x"})
    EXPECT_FALSE(parse_gpu(bad)) << bad;
}

/// An fp16 failure list of one entry, parsed as the built-in one is.
std::vector<Fp16Failure> one_failure(const std::string& entry) {
  return parse_fp16_failures("[" + entry + "]", "test.json");
}

TEST(DocumentedFp16Failures, MatchByArchitectureModelTypeOrIdWithEveryConfigField) {
  std::vector<Fp16Failure> failures =
      one_failure(R"({"id": "x", "architectures": ["XForCausalLM"], "ids": ["org/x-*"], "config": {"variant": 2},)"
                  R"( "says": "s", "source": "src", "quote": "q"})");
  auto matches = [&](ModelIdentity identity) { return find_fp16_failures(failures, identity).size() == 1; };
  EXPECT_TRUE(matches({.config = {{"architectures", {"XForCausalLM"}}, {"variant", 2}}}));
  EXPECT_FALSE(matches({.config = {{"architectures", {"XForCausalLM"}}, {"variant", 3}}}));
  EXPECT_FALSE(matches({.config = {{"architectures", {"YForCausalLM"}}, {"variant", 2}}}));
  EXPECT_TRUE(matches({.hub_id = "Org/X-7B", .config = {{"variant", 2}}}));
  EXPECT_FALSE(matches({.hub_id = "org/y-7b", .config = {{"variant", 2}}}));
  std::vector<Fp16Failure> by_type =
      one_failure(R"({"id": "t", "model_types": ["gemma2"], "says": "s", "source": "src", "quote": "q"})");
  EXPECT_EQ(find_fp16_failures(by_type, {.config = {{"text_config", {{"model_type", "gemma2"}}}}}).size(), 1u);
}

TEST(DocumentedFp16Failures, AnEntryWithoutSourceQuoteOrNamesIsRefused) {
  for (const char* entry : {R"({"id": "a", "model_types": ["t5"], "says": "s", "quote": "q"})",
                            R"({"id": "a", "model_types": ["t5"], "says": "s", "source": "src"})",
                            R"({"id": "a", "says": "s", "source": "src", "quote": "q"})",
                            R"({"id": "a", "model_types": "t5", "says": "s", "source": "src", "quote": "q"})"}) {
    try {
      one_failure(entry);
      ADD_FAILURE() << "accepted: " << entry;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidRegistry) << entry;
    }
  }
  EXPECT_GE(documented_fp16_failures().size(), 3u);
}

/// The serving precision transformers gets for `summary` on `gpu`.
RunPrecision serving(const Verdict& verdict) {
  for (const ToolPlan& plan : verdict.advice->plans)
    if (plan.target == PlanTarget::kServing && plan.tool == "transformers") return plan.precision;
  return RunPrecision::kBf16;
}

TEST(Advice, ARangeRiskNeedsBf16OrFp32AndADocumentedRemedyAllowsFp16WithItsKeepList) {
  const SeedRow& t5_small = kSeedTable[9];  // abs max in the hundreds: a range risk
  Judgement t4{default_rules(), default_registry(), *parse_gpu("T4")};
  Judgement a100{default_rules(), default_registry(), *parse_gpu("A100")};
  ModelSummary summary = summary_of(t5_small);
  EXPECT_EQ(serving(judge({.summary = summary, .identity = {}}, t4)), RunPrecision::kFp32);
  EXPECT_EQ(serving(judge({.summary = summary, .identity = {}}, a100)), RunPrecision::kBf16);
  ModelIdentity t5{.config = {{"model_type", "t5"}, {"architectures", {"T5ForConditionalGeneration"}}}};
  Verdict verdict = judge({.summary = summary, .identity = t5}, t4);
  EXPECT_EQ(serving(verdict), RunPrecision::kFp16Keep);
  ASSERT_EQ(verdict.advice->keep_in_fp32.size(), 1u);
  EXPECT_EQ(verdict.advice->keep_in_fp32[0].module, "wo");
  EXPECT_EQ(verdict.advice->keep_in_fp32[0].basis, KeepBasis::kDocumented);
  for (const ToolPlan& plan : verdict.advice->plans)
    EXPECT_NE(plan.precision, plan.tool == "transformers" ? RunPrecision::kFp16 : RunPrecision::kFp16Keep) << plan.tool;
  // A probe that measured where the activations go over answers the range risk too.
  ActivationPeak peak{.module = "encoder.block.0.layer.1.DenseReluDense.wo", .output = 1e5, .input = 10};
  Verdict probed = judge({.summary = summary, .identity = {}, .activations = std::span(&peak, 1)}, t4);
  EXPECT_EQ(serving(probed), RunPrecision::kFp16Keep);
  EXPECT_EQ(probed.advice->keep_in_fp32[0].basis, KeepBasis::kActivation);
}

}  // namespace
}  // namespace precdetect
