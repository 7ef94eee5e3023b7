#include "precdetect/classify/advice.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "precdetect/classify/verdict.h"
#include "precdetect/load/gguf/gguf_names.h"

namespace precdetect {
namespace {

/// The module a parameter or buffer belongs to: its name without the last part.
std::string module_of(const std::string& tensor) {
  size_t dot = tensor.rfind('.');
  return dot == std::string::npos ? tensor : tensor.substr(0, dot);
}

const Fp16Failure* failure_named(const AdviceInputs& inputs, const std::string& id) {
  for (const Fp16Failure* failure : inputs.failures)
    if (failure->id == id) return failure;
  return nullptr;
}

void add_keep(std::vector<KeepModule>& keep, KeepModule entry) {
  bool listed = std::any_of(keep.begin(), keep.end(), [&](const KeepModule& k) { return k.module == entry.module; });
  if (!listed) keep.push_back(std::move(entry));
}

std::vector<KeepModule> keep_list(const Verdict& verdict, const AdviceInputs& inputs) {
  std::vector<KeepModule> keep;
  for (const Fp16Failure* failure : inputs.failures)
    for (const std::string& module : failure->keep_in_fp32)
      add_keep(keep, {module, KeepBasis::kDocumented, fmt::format("{} ({})", failure->says, failure->id)});
  for (const Fp16RiskReason& reason : verdict.fp16_risk_reasons) {
    if (reason.kind == Fp16RiskKind::kOverflow)
      add_keep(keep, {module_of(reason.tensor), KeepBasis::kWeights,
                      fmt::format("{} overflows fp16 (abs max {:.3g})", reason.tensor, reason.value)});
    if (reason.kind == Fp16RiskKind::kFlushToZero)
      add_keep(keep,
               {module_of(reason.tensor), KeepBasis::kWeights,
                fmt::format("{}: {:.0f}% of its values flush to zero in fp16", reason.tensor, 100 * reason.value)});
    if (reason.kind == Fp16RiskKind::kActivation)
      add_keep(keep, {reason.tensor, KeepBasis::kActivation,
                      fmt::format("its activations reach {:.3g}, over fp16's 65504", reason.value)});
  }
  return keep;
}

/// Whether keeping the keep list in fp32 answers `reason`. Weights that overflow or flush, and measured
/// activations, name their modules. Ranges learned wider than fp16, or a documented bf16 pretraining, say only
/// that activations may outgrow fp16: a keep list answers them where a source gives one for the architecture or
/// a forward pass measured where they do.
bool answered(const Fp16RiskReason& reason, const AdviceInputs& inputs, bool documented_keep) {
  switch (reason.kind) {
    case Fp16RiskKind::kOverflow:
    case Fp16RiskKind::kFlushToZero:
    case Fp16RiskKind::kActivation:
      return true;
    case Fp16RiskKind::kDocumented:
      if (const Fp16Failure* failure = failure_named(inputs, reason.rule)) return !failure->keep_in_fp32.empty();
      return documented_keep || inputs.activations_measured;
    case Fp16RiskKind::kRange:
      return documented_keep || inputs.activations_measured;
  }
  return false;
}

bool keep_answers_all(const Verdict& verdict, const AdviceInputs& inputs, const std::vector<KeepModule>& keep) {
  if (keep.empty()) return false;
  bool documented_keep =
      std::any_of(keep.begin(), keep.end(), [](const KeepModule& k) { return k.basis == KeepBasis::kDocumented; });
  return std::all_of(verdict.fp16_risk_reasons.begin(), verdict.fp16_risk_reasons.end(),
                     [&](const Fp16RiskReason& reason) { return answered(reason, inputs, documented_keep); });
}

/// A GGUF tensor name as a llama-quantize --tensor-type pattern: a regular expression searched in the names, so
/// the dots are escaped (`blk\.1\.` must not match `blk.10.`).
std::string quantize_pattern(const std::string& name) {
  std::string pattern;
  for (char c : name) pattern += c == '.' ? std::string("\\.") : std::string(1, c);
  return pattern;
}

void name_gguf_keep(Advice& advice, const Verdict& verdict, const AdviceInputs& inputs) {
  for (const Fp16RiskReason& reason : verdict.fp16_risk_reasons) {
    if (reason.kind != Fp16RiskKind::kOverflow && reason.kind != Fp16RiskKind::kFlushToZero) continue;
    std::optional<std::string> name = inputs.gguf_names   ? std::optional(reason.tensor)
                                      : inputs.llama_like ? gguf_name(reason.tensor)
                                                          : std::nullopt;
    if (!name) {
      ++advice.gguf_unnamed;
      continue;
    }
    std::string pattern = quantize_pattern(*name);
    if (std::find(advice.gguf_keep.begin(), advice.gguf_keep.end(), pattern) == advice.gguf_keep.end())
      advice.gguf_keep.push_back(pattern);
  }
}

RunPrecision choose(const Verdict& verdict, const GpuClass& gpu, bool keep_answers) {
  if (gpu.cpu) return RunPrecision::kFp32;
  if (!verdict.fp16_risk())
    return gpu.bf16() && verdict.label != Label::kFp16 ? RunPrecision::kBf16 : RunPrecision::kFp16;
  if (gpu.bf16()) return RunPrecision::kBf16;
  return keep_answers ? RunPrecision::kFp16Keep : RunPrecision::kFp32;
}

std::string transformers_setting(RunPrecision precision, const Advice& advice, const std::string& model_class) {
  switch (precision) {
    case RunPrecision::kBf16:
      return "from_pretrained(..., dtype=torch.bfloat16)";
    case RunPrecision::kFp16:
      return "from_pretrained(..., dtype=torch.float16)";
    case RunPrecision::kFp32:
      return "from_pretrained(..., dtype=torch.float32)";
    case RunPrecision::kFp16Keep: {
      std::vector<std::string> quoted;
      for (const KeepModule& keep : advice.keep_in_fp32) quoted.push_back(fmt::format("\"{}\"", keep.module));
      return fmt::format("{}._keep_in_fp32_modules = [{}], then from_pretrained(..., dtype=torch.float16)",
                         model_class.empty() ? "ModelClass" : model_class, fmt::join(quoted, ", "));
    }
  }
  return "";
}

void add_fine_tuning(Advice& advice, RunPrecision precision) {
  // Mixed precision autocasts every module to the half type: a keep list does not apply, so fp16 with one is fp32.
  if (precision == RunPrecision::kFp16Keep) precision = RunPrecision::kFp32;
  auto pick = [&](const char* bf16, const char* fp16, const char* fp32) {
    return precision == RunPrecision::kBf16 ? bf16 : precision == RunPrecision::kFp16 ? fp16 : fp32;
  };
  advice.plans.push_back({PlanTarget::kFineTuning, "transformers Trainer", precision,
                          pick("TrainingArguments(bf16=True)", "TrainingArguments(fp16=True)",
                               "TrainingArguments(bf16=False, fp16=False)")});
  advice.plans.push_back(
      {PlanTarget::kFineTuning, "Lightning", precision,
       pick("Trainer(precision=\"bf16-mixed\")", "Trainer(precision=\"16-mixed\")", "Trainer(precision=\"32-true\")")});
  advice.plans.push_back({PlanTarget::kFineTuning, "QLoRA (bitsandbytes)", precision,
                          pick("BitsAndBytesConfig(bnb_4bit_compute_dtype=torch.bfloat16)",
                               "BitsAndBytesConfig(bnb_4bit_compute_dtype=torch.float16)",
                               "BitsAndBytesConfig(bnb_4bit_compute_dtype=torch.float32)")});
}

void add_serving(Advice& advice, RunPrecision precision, const std::string& model_class) {
  advice.plans.push_back(
      {PlanTarget::kServing, "transformers", precision, transformers_setting(precision, advice, model_class)});
  // vLLM has no keep list: fp16 with one is fp32 there.
  RunPrecision vllm = precision == RunPrecision::kFp16Keep ? RunPrecision::kFp32 : precision;
  advice.plans.push_back({PlanTarget::kServing, "vLLM", vllm,
                          vllm == RunPrecision::kBf16   ? "--dtype bfloat16"
                          : vllm == RunPrecision::kFp16 ? "--dtype float16"
                                                        : "--dtype float32"});
}

/// A GGUF file is converted once and run anywhere: at risk, bf16 keeps the range (f32 where the GPU has no bf16).
void add_conversion(Advice& advice, const Verdict& verdict, const GpuClass& gpu) {
  RunPrecision outtype = !verdict.fp16_risk()    ? RunPrecision::kFp16
                         : gpu.bf16() || gpu.cpu ? RunPrecision::kBf16
                                                 : RunPrecision::kFp32;
  advice.plans.push_back({PlanTarget::kConversion, "llama.cpp convert_hf_to_gguf.py", outtype,
                          fmt::format("--outtype {}", outtype == RunPrecision::kBf16   ? "bf16"
                                                      : outtype == RunPrecision::kFp16 ? "f16"
                                                                                       : "f32")});
  if (advice.gguf_keep.empty()) return;
  std::vector<std::string> arguments;
  for (const std::string& pattern : advice.gguf_keep) arguments.push_back(fmt::format("--tensor-type {}=f32", pattern));
  advice.plans.push_back(
      {PlanTarget::kConversion, "llama-quantize", RunPrecision::kFp32, fmt::format("{}", fmt::join(arguments, " "))});
}

std::string risk_summary(const Verdict& verdict) {
  std::vector<std::string_view> kinds;
  for (const Fp16RiskReason& reason : verdict.fp16_risk_reasons)
    if (std::find(kinds.begin(), kinds.end(), risk_kind_name(reason.kind)) == kinds.end())
      kinds.push_back(risk_kind_name(reason.kind));
  return fmt::format("at risk in fp16 ({})", fmt::join(kinds, ", "));
}

std::string why(const Verdict& verdict, const Advice& advice, RunPrecision precision) {
  std::string gpu = advice.gpu.describe();
  if (!verdict.fp16_risk())
    return fmt::format("Nothing in the weights or their documentation says this model breaks in fp16; on {}: {}.", gpu,
                       precision);
  std::string risk = risk_summary(verdict);
  switch (precision) {
    case RunPrecision::kBf16:
      return fmt::format("The model is {}; {} computes in bf16, which has fp32's range.", risk, gpu);
    case RunPrecision::kFp16Keep:
      return fmt::format(
          "The model is {}; {} has no bf16, and keeping {} module(s) in fp32 answers every reason: fp16 "
          "with the keep list where the tool takes one (transformers), fp32 elsewhere.",
          risk, gpu, advice.keep_in_fp32.size());
    default:
      return advice.gpu.cpu ? fmt::format("The model is {}; on the CPU, fp32.", risk)
                            : fmt::format(
                                  "The model is {}; {} has no bf16, and no keep list answers every reason: "
                                  "fp32.",
                                  risk, gpu);
  }
}

}  // namespace

std::string_view run_precision_name(RunPrecision precision) {
  switch (precision) {
    case RunPrecision::kBf16:
      return "bf16";
    case RunPrecision::kFp16:
      return "fp16";
    case RunPrecision::kFp16Keep:
      return "fp16+keep";
    case RunPrecision::kFp32:
      return "fp32";
  }
  return "fp32";
}

std::string_view plan_target_name(PlanTarget target) {
  switch (target) {
    case PlanTarget::kFineTuning:
      return "fine_tuning";
    case PlanTarget::kServing:
      return "serving";
    case PlanTarget::kConversion:
      return "conversion";
  }
  return "serving";
}

std::string_view keep_basis_name(KeepBasis basis) {
  switch (basis) {
    case KeepBasis::kWeights:
      return "weights";
    case KeepBasis::kActivation:
      return "activation";
    case KeepBasis::kDocumented:
      return "documented";
  }
  return "weights";
}

Advice advise(const Verdict& verdict, const AdviceInputs& inputs, const GpuClass& gpu) {
  Advice advice{.gpu = gpu, .keep_in_fp32 = keep_list(verdict, inputs)};
  name_gguf_keep(advice, verdict, inputs);
  RunPrecision precision = choose(verdict, gpu, keep_answers_all(verdict, inputs, advice.keep_in_fp32));
  add_fine_tuning(advice, precision);
  add_serving(advice, precision, inputs.model_class);
  add_conversion(advice, verdict, gpu);
  advice.why = why(verdict, advice, precision);
  return advice;
}

}  // namespace precdetect
