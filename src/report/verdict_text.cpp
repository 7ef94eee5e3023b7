#include "precdetect/report/verdict_text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "precdetect/report/stat_text.h"
#include "precdetect/safety/safety.h"

namespace precdetect {
namespace {

/// "documented bf16 pretraining, documented fp16 failure (sdxl-vae)": a documented precision's reason has no source
/// of its own (the verdict's `documented` entry holds it); a documented failure's names its entry.
std::string documented_text(const Verdict& verdict) {
  std::vector<std::string> parts;
  for (const Fp16RiskReason& reason : verdict.fp16_risk_reasons)
    if (reason.kind == Fp16RiskKind::kDocumented)
      parts.push_back(reason.source.empty() ? "documented bf16 pretraining"
                                            : fmt::format("documented fp16 failure ({})", reason.rule));
  return fmt::format("{}", fmt::join(parts, ", "));
}

/// "overflow in 2 tensors (conv2_BN.running_var 4.970e+05, ...)" for the reasons of one kind.
std::string kind_text(const Verdict& verdict, Fp16RiskKind kind) {
  const Fp16RiskReason* first = nullptr;
  size_t count = 0;
  for (const Fp16RiskReason& reason : verdict.fp16_risk_reasons)
    if (reason.kind == kind) first = first ? first : &reason, ++count;
  if (!first) return "";
  if (kind == Fp16RiskKind::kRange) return "range";
  if (kind == Fp16RiskKind::kDocumented) return documented_text(verdict);
  if (kind == Fp16RiskKind::kActivation)
    return fmt::format("activations over 65504 in {} module{} ({} {}{})", count, count == 1 ? "" : "s", first->tensor,
                       format_stat(true, first->value), count > 1 ? ", ..." : "");
  std::string value = kind == Fp16RiskKind::kOverflow ? format_stat(true, first->value)
                                                      : fmt::format("{:.0f}% to 0", 100 * first->value);
  return fmt::format("{} in {} tensor{} ({}{} {}{})", kind == Fp16RiskKind::kOverflow ? "overflow" : "flush to zero",
                     count, count == 1 ? "" : "s", first->role == TensorRole::kBuffer ? "buffer " : "", first->tensor,
                     value, count > 1 ? ", ..." : "");
}

/// " UNSAFE pickle: posix.system", " UNSAFE: path_escape" (tampering), " unverified" when loading it is not known
/// to be safe; "" when it is.
std::string safety_cell(const ModelReport& model) {
  if (!model.safety) return "";
  switch (model.safety->verdict()) {
    case SafetyVerdict::kUnsafe:
      if (const SafetyImport* danger = model.safety->first_dangerous()) return " UNSAFE pickle: " + danger->qualified();
      if (model.safety->tampering.empty()) return " UNSAFE: custom code";
      return fmt::format(" UNSAFE: {}", tampering_name(model.safety->tampering.front().kind));
    case SafetyVerdict::kUnverified:
      return model.safety->custom_code.empty() ? " unverified" : " unverified: custom code";
    case SafetyVerdict::kSafe:
      return "";
  }
  return "";
}

}  // namespace

std::string label_text(const Verdict& verdict) {
  std::vector<Label> others;
  if (verdict.label != Label::kUnknown)
    for (Label candidate : verdict.candidates)
      if (!shares_precision(candidate, verdict.label)) others.push_back(candidate);
  if (others.empty()) return fmt::format("{} ({:.2f})", verdict.label, verdict.confidence);
  return fmt::format("{} ({:.2f}; not ruled out: {})", verdict.label, verdict.confidence, fmt::join(others, ", "));
}

std::string basis_text(const Verdict& verdict) {
  std::string text;
  if (verdict.decided_by == VerdictBasis::kRecords) {
    size_t more = verdict.records.size() - 1;
    text = fmt::format(" from {}{}", record_text(verdict.records.front()),
                       more ? fmt::format(" (+{} record{})", more, more == 1 ? "" : "s") : "");
  }
  if (const std::optional<Documented>& documented = verdict.documented)
    text +=
        fmt::format("{} documented {} for {}{} ({}, by {})", text.empty() ? "" : ";", documented->precision,
                    documented->base_model ? "base " : "", documented->id, documented->grade, documented->matched_by);
  std::vector<std::string_view> kinds;
  for (const Conflict& conflict : verdict.conflicts) kinds.push_back(conflict_kind_name(conflict.kind));
  return kinds.empty() ? text : fmt::format("{}; conflict: {}", text, fmt::join(kinds, ", "));
}

std::string adapter_text(const ModelReport& model) {
  if (!model.adapter) return "";
  const Adapter& adapter = *model.adapter;
  if (!adapter.base_model) return fmt::format(" adapter ({}), no base named", adapter.format);
  bool scanned = model.base_scan && !model.base_scan->error;
  return fmt::format(" adapter ({}) of {}{}", adapter.format, *adapter.base_model,
                     scanned ? fmt::format(" (base scanned: {})", model.base_scan->path) : "");
}

std::string risk_reasons_text(const Verdict& verdict) {
  std::vector<std::string> parts;
  for (Fp16RiskKind kind : {Fp16RiskKind::kRange, Fp16RiskKind::kDocumented, Fp16RiskKind::kOverflow,
                            Fp16RiskKind::kFlushToZero, Fp16RiskKind::kActivation})
    if (std::string part = kind_text(verdict, kind); !part.empty()) parts.push_back(std::move(part));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string risk_text(const Verdict& verdict) {
  return verdict.fp16_risk() ? " fp16-risk: " + risk_reasons_text(verdict) : "";
}

std::string model_verdict_text(const ModelReport& model) {
  std::string gate = model.gate_failures.empty() ? "" : " GATE FAILED";
  if (model.error) return "error: " + std::string(to_string(model.error->code)) + safety_cell(model) + gate;
  if (!model.values_read) {  // --safety-only, --headers-only: no values, no verdict
    std::string cell = safety_cell(model);
    // --headers-only: the documented precision of the model its name names, which needs no values.
    std::string documented = model.headers_read && model.verdict.documented ? ";" + basis_text(model.verdict) : "";
    return fmt::format("{} only:{}{}{}", model.headers_read ? "headers" : "safety", cell.empty() ? " safe" : cell,
                       documented, gate);
  }
  return fmt::format("{}{}{}{}{}{}", label_text(model.verdict), adapter_text(model), basis_text(model.verdict),
                     risk_text(model.verdict), safety_cell(model), gate);
}

}  // namespace precdetect
