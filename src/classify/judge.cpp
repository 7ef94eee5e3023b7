#include "precdetect/classify/judge.h"

#include "precdetect/analyze/cast_safety.h"
#include "precdetect/classify/evidence/cast_risks.h"
#include "precdetect/classify/evidence/documented_precision.h"
#include "precdetect/classify/evidence/ranges.h"
#include "precdetect/classify/evidence/records.h"

namespace precdetect {
namespace {

Hints storage_hints(const ModelSummary& summary, const ModelIdentity& identity) {
  Hints hints;
  for (const auto& [dtype, census] : summary.census) hints.stored_dtypes.push_back(dtype);
  hints.config_dtype = config_dtype(identity.config);
  return hints;
}

std::optional<Documented> documented_for(const ModelEvidence& evidence, const Registry& registry) {
  if (!evidence.adapter) return find_documented(registry, evidence.identity);
  if (!evidence.adapter->base_model) return std::nullopt;
  return find_base_documented(registry, *evidence.adapter->base_model);
}

void weigh_fp16_failures(Verdict& verdict, std::span<const Fp16Failure* const> failures) {
  for (const Fp16Failure* failure : failures)
    verdict.fp16_risk_reasons.push_back(
        {.kind = Fp16RiskKind::kDocumented, .rule = failure->id, .source = failure->source});
}

void weigh_activations(Verdict& verdict, std::span<const ActivationPeak> activations) {
  for (const ActivationPeak& peak : activations)
    if (double largest = std::max(peak.output, peak.input); largest > kFp16Format.max)
      verdict.fp16_risk_reasons.push_back({.kind = Fp16RiskKind::kActivation, .tensor = peak.module, .value = largest});
}

void append(Verdict& verdict, std::vector<Fp16RiskReason> reasons) {
  for (Fp16RiskReason& reason : reasons) verdict.fp16_risk_reasons.push_back(std::move(reason));
}

std::string model_class(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("architectures") || !config["architectures"].is_array() ||
      config["architectures"].empty() || !config["architectures"][0].is_string())
    return "";
  return config["architectures"][0].get<std::string>();
}

bool llama_like(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("model_type") || !config["model_type"].is_string()) return false;
  std::string type = config["model_type"].get<std::string>();
  return type == "llama" || type == "qwen2" || type == "qwen3";
}

}  // namespace

Verdict judge(const ModelEvidence& evidence, const Judgement& judgement) {
  Verdict verdict{.hints = storage_hints(evidence.summary, evidence.identity)};
  verdict.evidence = evaluate_rules(judgement.rules, evidence.summary);
  std::optional<Documented> documented = documented_for(evidence, judgement.registry);
  if (evidence.adapter) {
    verdict.records.assign(evidence.records.begin(), evidence.records.end());
    weigh_documented(verdict, documented, nullptr);
    append(verdict, cast_risks(evidence.tensors));
    if (evidence.base_verdict) adopt_base_verdict(verdict, *evidence.base_verdict);
  } else {
    const RuleEvidence* winner = decide_by_ranges(verdict, evidence.summary);
    weigh_records(verdict, evidence.records, evidence.summary, winner);
    weigh_documented(verdict, documented, winner);
    append(verdict, cast_risks(evidence.tensors));
  }
  std::vector<const Fp16Failure*> failures = find_fp16_failures(judgement.failures, evidence.identity);
  weigh_fp16_failures(verdict, failures);
  weigh_activations(verdict, evidence.activations);
  verdict.advice = advise(verdict,
                          {.tensors = evidence.tensors,
                           .failures = failures,
                           .gguf_names = evidence.gguf_names,
                           .llama_like = llama_like(evidence.identity.config),
                           .activations_measured = !evidence.activations.empty(),
                           .model_class = model_class(evidence.identity.config)},
                          judgement.gpu);
  return verdict;
}

std::optional<std::string> config_dtype(const nlohmann::json& config) {
  if (!config.is_object()) return std::nullopt;
  for (const auto* scope : {&config, config.contains("text_config") ? &config["text_config"] : nullptr}) {
    if (scope == nullptr || !scope->is_object()) continue;
    for (const char* key : {"dtype", "torch_dtype"})
      if (scope->contains(key) && (*scope)[key].is_string()) return (*scope)[key].get<std::string>();
  }
  return std::nullopt;
}

}  // namespace precdetect
