#include "precdetect/report/table_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

#include "precdetect/analyze/cast_safety.h"
#include "precdetect/classify/evidence/records.h"
#include "precdetect/classify/evidence/storage_casts.h"
#include "precdetect/report/batch_counts.h"
#include "precdetect/report/exponent_chart.h"
#include "precdetect/report/inventory_report.h"
#include "precdetect/report/stat_text.h"
#include "precdetect/report/verdict_text.h"

namespace precdetect {
namespace {

constexpr size_t kMaxNameWidth = 60;

std::string human_count(uint64_t count) {
  static constexpr std::array<const char*, 5> kUnits = {"", "K", "M", "B", "T"};
  double value = static_cast<double>(count);
  size_t unit = 0;
  while (value >= 1000.0 && unit + 1 < kUnits.size()) value /= 1000.0, ++unit;
  return unit == 0 ? fmt::format("{}", count) : fmt::format("{:.1f}{}", value, kUnits[unit]);
}

std::string dtype_census(const ModelSummary& summary) {
  std::string text;
  for (const auto& [dtype, census] : summary.census)
    text += fmt::format("{}{}:{}", text.empty() ? "" : ",", dtype, census.tensors);
  return text.empty() ? "-" : text;
}

/// Under -v, for a GGUF file: what its header says of the model (the JSON has every key/value).
void append_metadata(std::string& out, const ModelReport& model) {
  const auto& metadata = model.metadata;
  if (!metadata.is_object() || metadata.value("format", "") != "gguf") return;
  const auto& values = metadata["key_values"];
  auto text = [&](const char* key) {
    if (!values.contains(key)) return std::string("-");
    // As JSON writes it (control characters escaped, bad UTF-8 replaced), without a string's quotes.
    std::string text = values[key].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return values[key].is_string() ? text.substr(1, text.size() - 2) : text;
  };
  out += fmt::format("  gguf: version {}, architecture {}, file type {}, quantization version {}\n",
                     metadata["version"].dump(), text("general.architecture"), metadata.value("file_type", "-"),
                     text("general.quantization_version"));
}

/// Under -v: the safety verdict in words, and each import that is not on the allowlist.
void append_safety(std::string& out, const ModelReport& model) {
  if (!model.safety) return;
  out += fmt::format("  safety: {}\n", safety_text(*model.safety));
  for (const SafetyImport& item : model.safety->imports)
    if (item.judgement.kind != GlobalClass::kAllowed)
      out += fmt::format("  import ({}{}): {}{} in {} at offset {}{}\n", item.judgement.kind,
                         item.judgement.why.empty() ? "" : ", " + item.judgement.why, item.qualified(),
                         item.spelling.empty() ? "" : fmt::format(" (written {})", item.spelling), item.file,
                         item.offset, item.called ? ", called" : "");
  for (const SafetyTampering& item : model.safety->tampering)
    out += fmt::format("  tampering ({}): {} in {} at offset {}\n", tampering_name(item.kind), item.detail, item.file,
                       item.offset);
  for (const CustomCode& item : model.safety->custom_code)
    out +=
        fmt::format("  custom code ({}): {}{}{}{}\n",
                    item.consent == CodeConsent::kNotAsked ? "imported without consent" : "consent asked", item.file,
                    item.classes.empty() ? "" : " (", fmt::join(item.classes, ", "), item.classes.empty() ? "" : ")") +
        (item.named_by.empty() ? "" : fmt::format("    named by {}\n", item.named_by)) +
        (item.why.empty() ? "" : fmt::format("    {}\n", item.why));
  for (const std::string& reason : model.safety->unverified) out += fmt::format("  unverified: {}\n", reason);
}

/// "5 models: bf16 3, fp16 1; 1 failed; 1 failed a gate" under a batch's rows.
std::string batch_line(const ScanReport& report) {
  BatchCounts counts = count_batch(report);
  std::string line = fmt::format("{} models", report.models.size());
  std::string separator = ": ";
  for (const auto& [label, count] : counts.labels) {
    line += fmt::format("{}{} {}", separator, label, count);
    separator = ", ";
  }
  for (const auto& [verdict, count] : counts.safety) {
    line += fmt::format("{}{} {}", separator, verdict, count);
    separator = ", ";
  }
  if (counts.failed) line += fmt::format("; {} failed", counts.failed);
  if (counts.gate_failed) line += fmt::format("; {} failed a gate", counts.gate_failed);
  return line + "\n";
}

/// Why a tensor's row may not count toward the model row (optimizer state, a buffer, a storage shared with
/// another), and how model-parallel parts were joined.
std::string tensor_note(const TensorReport& tensor) {
  if (tensor.role == TensorRole::kOptimizer) return "optimizer state";
  if (tensor.role == TensorRole::kScale) return "quantization scale (not in the verdict)";
  if (std::optional<uint64_t> stored = tensor.scaled_by ? tensor.scaled_by->stored_values() : std::nullopt)
    return fmt::format("sparse: {} of {} values stored{}", *stored, tensor.numel,
                       tensor.stats && tensor.numel > 0
                           ? fmt::format(", {:.1f}% zeros", 100.0 * static_cast<double>(tensor.stats->zeros) /
                                                                static_cast<double>(tensor.numel))
                           : "");
  if (tensor.scaled_by) return fmt::format("dequantized: x {}", tensor.scaled_by->scale());
  if (tensor.role == TensorRole::kBuffer) return "buffer (not in the verdict)";
  if (tensor.shares_storage_with) return "shares " + *tensor.shares_storage_with;
  if (!tensor.parts.empty())
    return fmt::format("{} model-parallel parts{}", tensor.parts.size(), tensor.replicated ? ", copies" : "");
  return "";
}

void append_tensor_rows(std::string& out, const ModelReport& model) {
  size_t width = 6;
  for (const auto& t : model.tensors) width = std::max(width, std::min(t.name.size(), kMaxNameWidth));
  out += fmt::format("  {:<{}} | {:<7} | {:^9} | {:^9} | {:^9} | {:>7} | {:>5} | {:>5} | {}\n", "tensor", width,
                     "dtype", "abs min", "abs max", "norm", "zeros", "nans", "infs", "note");
  for (const auto& t : model.tensors) {
    const auto& s = t.stats;
    bool values = s && s->has_values();
    out += fmt::format("  {:<{}} | {:<7} | {:>9} | {:>9} | {:>9} | {:>7} | {:>5} | {:>5} | {}\n",
                       elide_middle(t.name, width), width, dtype_name(t.dtype),
                       format_stat(values, values ? s->abs_min : 0), format_stat(values, values ? s->abs_max : 0),
                       format_stat(s.has_value(), s ? s->norm() : 0), s ? fmt::format("{}", s->zeros) : "-",
                       s ? fmt::format("{}", s->nans) : "-", s ? fmt::format("{}", s->infs) : "-", tensor_note(t));
  }
}

/// Under -v: every training record with its kind and confidence, the documented precision with its source, and
/// every conflict in full.
void append_records(std::string& out, const Verdict& verdict) {
  for (const TrainingRecord& record : verdict.records)
    out += fmt::format("  record ({}): {} -> {} ({:.2f})\n", record.kind, record_text(record), record.label,
                       record_confidence(record.label));
  if (const std::optional<Documented>& documented = verdict.documented)
    out += fmt::format("  documented ({} {}): {} -> {}, grade {} ({:.2f}){}; {}{}\n", documented->matched_by,
                       documented->matched, documented->id, documented->precision, documented->grade,
                       documented->confidence, documented->base_model ? ", the base model's pretraining" : "",
                       documented->source, documented->quote.empty() ? "" : fmt::format(": \"{}\"", documented->quote));
  for (const Conflict& conflict : verdict.conflicts)
    out += fmt::format("  conflict ({}): {}\n", conflict.kind, conflict.detail);
}

/// Under -v: what to run the model in on the run's GPU class, each tool's setting, and the keep list.
void append_advice(std::string& out, const Verdict& verdict) {
  if (!verdict.advice) return;
  const Advice& advice = *verdict.advice;
  out += fmt::format("  advice: {}\n", advice.why);
  for (const ToolPlan& plan : advice.plans)
    out += fmt::format("    {:<11} {:<33} {:<9} {}\n", plan_target_name(plan.target), plan.tool, plan.precision,
                       plan.setting);
  for (const KeepModule& keep : advice.keep_in_fp32)
    out += fmt::format("    keep in fp32: {} ({}: {})\n", keep.module, keep_basis_name(keep.basis), keep.why);
  if (advice.gguf_unnamed > 0)
    out += fmt::format("    {} tensor(s) of the keep list have no known GGUF name\n", advice.gguf_unnamed);
}

/// Under -v: what casts to narrower formats would do, the groups, and the exponent chart.
void append_precision(std::string& out, const ModelReport& model) {
  const ModelSummary& summary = model.summary;
  const TensorStats& totals = summary.totals;
  for (const NarrowFormat& format : kNarrowFormats) {
    FormatFit fit = format_fit(totals, format);
    out += fmt::format("  cast to {:<8}: {} overflow (> {}), {} subnormal, {} flushed to zero\n", format.name,
                       fit.overflow, format.max, fit.subnormal, fit.underflow);
  }
  out += fmt::format("  {} values above 1e2; {} at or above 256 (their squares overflow fp16)\n", totals.above_1e2,
                     square_overflow(totals));
  if (std::optional<StorageCast> cast = storage_cast(totals))
    out += fmt::format("  storage: {:.1f}% of F32/F64 values are bf16-exact, {:.1f}% fp16-exact: {}\n",
                       100 * cast->bf16_exact, 100 * cast->fp16_exact, cast->says);
  out += fmt::format("  {:<10} | {:>7} | {:^9} | {:^9} | {:>9} | {:>13}\n", "group", "params", "abs max", "norm max",
                     "> 1e2", "fp16 overflow");
  for (const auto& [name, group] : summary.groups)
    out +=
        fmt::format("  {:<10} | {:>7} | {:>9} | {:>9} | {:>9} | {:>13}\n", name, human_count(group.parameters),
                    format_stat(group.has_values, group.abs_max), format_stat(group.has_nonzero_norm, group.norm_max),
                    group.totals.above_1e2, group.totals.above_fp16_max);
  out += render_exponent_chart(totals.exponents, "  ");
  const ValueSummary& buffers = model.buffers;
  if (buffers.tensors > 0)
    out += fmt::format(
        "  buffers (kept out of the verdict): {} tensors, {} values, abs max {}, norm max {}, {} above "
        "fp16's max\n",
        buffers.tensors, human_count(buffers.parameters), format_stat(buffers.has_values, buffers.abs_max),
        format_stat(buffers.has_nonzero_norm, buffers.norm_max), buffers.totals.above_fp16_max);
}

}  // namespace

std::string render_table(const ScanReport& report, bool per_tensor) {
  size_t width = 4, dtypes_width = 12;  // every row's census fits its column, however many dtypes it lists
  for (const auto& model : report.models) {
    width = std::max(width, std::min(model.input.size(), kMaxNameWidth));
    dtypes_width = std::max(dtypes_width, dtype_census(model.summary).size());
  }
  std::string out =
      fmt::format("{:<{}} | {:^9} | {:^9} | {:^9} | {:^9} | {:>7} | {:<{}} | {}\n", "name", width, "abs min", "abs max",
                  "norm min", "norm max", "params", "dtypes", dtypes_width, "verdict");
  out += fmt::format("{:-<{}}-|-{:-<9}-|-{:-<9}-|-{:-<9}-|-{:-<9}-|-{:-<7}-|-{:-<{}}-|-{:-<20}\n", "", width, "", "",
                     "", "", "", "", dtypes_width, "");
  for (const auto& model : report.models) {
    const ModelSummary& s = model.summary;
    out +=
        fmt::format("{:<{}} | {:>9} | {:>9} | {:>9} | {:>9} | {:>7} | {:<{}} | {}\n", elide_middle(model.input, width),
                    width, format_stat(s.has_values, s.abs_min), format_stat(s.has_values, s.abs_max),
                    format_stat(s.has_nonzero_norm, s.norm_min), format_stat(s.has_nonzero_norm, s.norm_max),
                    human_count(s.parameters), dtype_census(s), dtypes_width, model_verdict_text(model));
    if (per_tensor && !model.error) {
      append_metadata(out, model);
      append_tensor_rows(out, model);
      append_records(out, model.verdict);
      append_advice(out, model.verdict);
      append_precision(out, model);
    }
    if (per_tensor) append_safety(out, model);
    if (model.bytes_transferred)
      out += fmt::format("  read over the network: {} bytes ({:.1f} MiB)\n", *model.bytes_transferred,
                         static_cast<double>(*model.bytes_transferred) / (1 << 20));
  }
  if (report.models.size() > 1) out += batch_line(report);
  out += files_line(count_batch(report).files);
  return out;
}

}  // namespace precdetect
