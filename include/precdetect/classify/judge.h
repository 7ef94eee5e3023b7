#pragma once
/// Stage 4's one entry: every kind of evidence about one model in, its verdict and advice out. Each kind of
/// evidence has its file in evidence/ (ranges, records, documented precision, documented fp16 failures, cast
/// risks, storage casts, adapters); judge() weighs them in the evidence order (docs/method.md) and computes the
/// advice last (advice.h). A new kind of evidence is one file there and one call here.

#include <span>
#include <string>
#include <vector>

#include "precdetect/analyze/analyzed_tensor.h"
#include "precdetect/analyze/summary.h"
#include "precdetect/classify/evidence/adapters.h"
#include "precdetect/classify/evidence/documented_fp16_failures.h"
#include "precdetect/classify/gpu.h"
#include "precdetect/classify/model_identity.h"
#include "precdetect/classify/registry.h"
#include "precdetect/classify/rules.h"
#include "precdetect/classify/verdict.h"

namespace precdetect {

/// The largest magnitudes a forward pass measured at one module (precdetect.probe).
struct ActivationPeak {
  std::string module;
  double output = 0.0;
  double input = 0.0;
};

/// What one model offers the judge.
struct ModelEvidence {
  const ModelSummary& summary;
  std::span<const AnalyzedTensor> tensors = {};
  const ModelIdentity& identity;
  std::span<const TrainingRecord> records = {};
  /// The weights are an adapter's: its ranges and records describe the adapter's training, never its base's
  /// pretraining, so they are shown and never decide.
  const Adapter* adapter = nullptr;
  const Verdict* base_verdict = nullptr;  ///< the adapter's base, as scanned on this machine
  std::span<const ActivationPeak> activations = {};
  bool gguf_names = false;  ///< the tensors carry llama.cpp's GGUF names (a GGUF file)
};

/// What the evidence is judged by, the same for every model of a run.
struct Judgement {
  const RuleSet& rules;
  const Registry& registry;
  GpuClass gpu = assumed_gpu();  ///< --gpu: the machine the advice plans for
  std::span<const Fp16Failure> failures = documented_fp16_failures();
};

/// The verdict on one model, with its advice. The range rules decide first; training records outrank them; a
/// documented precision outranks the ranges and yields to records (each disagreement a conflict). An adapter's
/// answer is its base's (the base's scanned verdict, else the registry's entry for its base, else "unknown"). fp16
/// risk collects every reason: a fired range rule, a documented bf16 pretraining or fp16 failure, a cast that
/// overflows or flushes, an activation measured over fp16's limit.
Verdict judge(const ModelEvidence& evidence, const Judgement& judgement);

/// config.json's declared dtype: "dtype", then "torch_dtype", then the same inside "text_config". nullopt when
/// absent (config is null when there is no readable config.json: a hint is never worth failing a scan for).
std::optional<std::string> config_dtype(const nlohmann::json& config);

}  // namespace precdetect
