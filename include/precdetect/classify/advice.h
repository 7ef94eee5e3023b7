#pragma once
/// What to run a model in: a plan per target (fine-tuning, serving, conversion) and tool, for one GPU class or the
/// CPU, computed last from the verdict's fp16 risk (docs/using.md, "What should I run it in?"). On a GPU with bf16,
/// a model at risk in fp16 runs in bf16; without bf16, in fp32, or in fp16 with a keep list where every risk is one
/// a keep list answers: tensors that overflow or flush when cast, modules a forward pass measured over the limit,
/// or an architecture whose documented remedy is one.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "precdetect/analyze/analyzed_tensor.h"
#include "precdetect/classify/evidence/documented_fp16_failures.h"
#include "precdetect/classify/gpu.h"
#include "precdetect/core/named_enum.h"

namespace precdetect {

struct Verdict;

enum class RunPrecision { kBf16, kFp16, kFp16Keep, kFp32 };
/// "bf16", "fp16", "fp16+keep" (fp16 with the keep list in fp32), "fp32" (JSON `advice.plans[].precision`).
std::string_view run_precision_name(RunPrecision precision);

enum class PlanTarget { kFineTuning, kServing, kConversion };
/// "fine_tuning", "serving", "conversion".
std::string_view plan_target_name(PlanTarget target);

/// What the keep list's entry rests on.
enum class KeepBasis { kWeights, kActivation, kDocumented };
/// "weights" (a tensor overflows or flushes when cast), "activation" (measured by a forward pass), "documented"
/// (the source of a documented fp16 failure keeps it).
std::string_view keep_basis_name(KeepBasis basis);

/// One module to keep in fp32, by transformers' name for it (a `_keep_in_fp32_modules` pattern: a module path, or
/// a name part such as T5's `wo`).
struct KeepModule {
  std::string module;
  KeepBasis basis = KeepBasis::kWeights;
  std::string why;  ///< "encoder.block.1.layer.1.DenseReluDense.wo.weight overflows fp16 (abs max 1.2e+05)"
};

/// One tool's setting for one target.
struct ToolPlan {
  PlanTarget target = PlanTarget::kServing;
  std::string tool;  ///< "transformers Trainer", "Lightning", "QLoRA (bitsandbytes)", "transformers", "vLLM", ...
  RunPrecision precision = RunPrecision::kBf16;
  std::string setting;  ///< in the tool's own syntax: "TrainingArguments(bf16=True)", "--dtype float32"
};

struct Advice {
  GpuClass gpu;
  std::vector<ToolPlan> plans;
  std::string why;  ///< one or two sentences: the risk, the GPU, and what the plan does about them
  std::vector<KeepModule> keep_in_fp32;
  /// The keep list's tensors by llama.cpp's GGUF names (llama-quantize --tensor-type patterns); tensors whose
  /// GGUF name is unknown are left out, and `gguf_unnamed` says how many.
  std::vector<std::string> gguf_keep;
  size_t gguf_unnamed = 0;
};

/// What the advice is computed from besides the verdict.
struct AdviceInputs {
  std::span<const AnalyzedTensor> tensors;
  std::span<const Fp16Failure* const> failures;  ///< the documented fp16 failures the model matched
  bool gguf_names = false;                       ///< the tensors' names are GGUF's (a GGUF file), else transformers'
  bool llama_like = false;  ///< config.json's model_type is one whose GGUF names are known (llama, qwen2, qwen3)
  bool activations_measured = false;  ///< a forward pass measured the activations (the probe)
  std::string model_class;  ///< config.json's architectures[0], for transformers' settings; empty when unknown
};

/// The plan for `gpu`.
Advice advise(const Verdict& verdict, const AdviceInputs& inputs, const GpuClass& gpu);

}  // namespace precdetect

template <>
struct fmt::formatter<precdetect::RunPrecision>
    : precdetect::NamedEnumFormatter<precdetect::RunPrecision, precdetect::run_precision_name> {};
