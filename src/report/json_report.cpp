#include "precdetect/report/json_report.h"

#include <cmath>

#include "precdetect/analyze/cast_safety.h"
#include "precdetect/classify/evidence/records.h"
#include "precdetect/classify/evidence/storage_casts.h"
#include "precdetect/report/batch_counts.h"
#include "precdetect/report/inventory_report.h"

namespace precdetect {
namespace {

using nlohmann::ordered_json;

/// JSON has no infinity: an infinite magnitude or norm is written as the string "inf" (docs/json-schema.md).
ordered_json number(double value) { return std::isinf(value) ? ordered_json("inf") : ordered_json(value); }
ordered_json number_if(bool present, double value) { return present ? number(value) : ordered_json(nullptr); }

/// [[exponent, count], ...] for the non-empty bins, ascending: values in [2^e, 2^(e+1)); e = -127 stands for
/// everything below 2^-126 and e = 128 for 2^128 and more (docs/json-schema.md).
ordered_json exponents_json(const ExponentHistogram& histogram) {
  ordered_json bins = ordered_json::array();
  for (int bin = 0; bin < ExponentHistogram::kBins; ++bin)
    if (histogram.counts[bin] != 0) bins.push_back({bin - ExponentHistogram::kBias, histogram.counts[bin]});
  return bins;
}

/// The precision diagnostics of a tensor or a set of them.
ordered_json precision_json(const TensorStats& stats) {
  ordered_json item = {{"above_1e2", stats.above_1e2}, {"square_overflow", square_overflow(stats)}};
  for (const NarrowFormat& format : kNarrowFormats) {
    FormatFit fit = format_fit(stats, format);
    item[std::string(format.name)] = {
        {"overflow", fit.overflow}, {"underflow", fit.underflow}, {"subnormal", fit.subnormal}};
  }
  auto fraction = [](std::optional<double> value) { return value ? ordered_json(*value) : ordered_json(nullptr); };
  item["bf16_exact"] = fraction(stats.bf16_exact_fraction());
  item["fp16_exact"] = fraction(stats.fp16_exact_fraction());
  item["exponents"] = exponents_json(stats.exponents);
  return item;
}

ordered_json census_json(const std::map<std::string, DTypeCensus>& census) {
  ordered_json item = ordered_json::object();
  for (const auto& [dtype, counts] : census)
    item[dtype] = {{"tensors", counts.tensors}, {"parameters", counts.parameters}, {"bytes", counts.bytes}};
  return item;
}

/// Bytes the parameters would take cast to each width (seed 002's memory table).
ordered_json footprint_json(uint64_t parameters) {
  return {{"fp32", parameters * 4}, {"fp16_bf16", parameters * 2}, {"int8_fp8", parameters}};
}

ordered_json name_if(bool present, const std::string& name) { return present ? ordered_json(name) : nullptr; }

ordered_json value_summary_json(const ValueSummary& summary) {
  ordered_json dtypes = ordered_json::object();
  for (const auto& [dtype, counts] : summary.census) dtypes[dtype] = counts.tensors;
  return {{"abs_min", number_if(summary.has_values, summary.abs_min)},
          {"abs_max", number_if(summary.has_values, summary.abs_max)},
          {"norm_min", number_if(summary.has_nonzero_norm, summary.norm_min)},
          {"norm_max", number_if(summary.has_nonzero_norm, summary.norm_max)},
          {"abs_max_tensor", name_if(summary.has_values, summary.abs_max_tensor)},
          {"norm_max_tensor", name_if(summary.has_nonzero_norm, summary.norm_max_tensor)},
          {"tensors", summary.tensors},
          {"parameters", summary.parameters},
          {"bytes", summary.bytes},
          {"dtypes", dtypes},
          {"analyzed_tensors", summary.analyzed_tensors},
          {"nans", summary.totals.nans},
          {"infs", summary.totals.infs},
          {"census", census_json(summary.census)},
          {"footprint", footprint_json(summary.parameters)},
          {"precision", precision_json(summary.totals)}};
}

ordered_json summary_json(const ModelSummary& summary) {
  ordered_json item = value_summary_json(summary);
  ordered_json groups = ordered_json::object();
  for (const auto& [group, part] : summary.groups) groups[std::string(group_name(group))] = value_summary_json(part);
  ordered_json layers = ordered_json::array();
  for (const auto& [layer, part] : summary.layers) {
    ordered_json entry = {{"stack", layer.stack}, {"index", layer.index}};
    entry.update(value_summary_json(part));
    layers.push_back(std::move(entry));
  }
  item["groups"] = std::move(groups);
  item["layers"] = std::move(layers);
  return item;
}

ordered_json storage_cast_json(const ModelSummary& summary) {
  std::optional<StorageCast> cast = storage_cast(summary.totals);
  if (!cast) return nullptr;
  return {{"wide_values", cast->wide_values},
          {"bf16_exact", cast->bf16_exact},
          {"fp16_exact", cast->fp16_exact},
          {"says", cast->says}};
}

ordered_json label_list(const std::vector<Label>& labels) {
  ordered_json names = ordered_json::array();
  for (Label label : labels) names.push_back(label_name(label));
  return names;
}

ordered_json labels_json(const std::map<Label, size_t>& counts) {
  ordered_json item = ordered_json::object();
  for (const auto& [label, count] : counts) item[std::string(label_name(label))] = count;
  return item;
}

ordered_json evidence_json(const RuleEvidence& evidence) {
  ordered_json observations = ordered_json::array();
  for (const Observation& o : evidence.observations)
    observations.push_back({{"stat", stat_def(o.stat).key},
                            {"op", op_symbol(o.op)},
                            {"threshold", o.threshold},
                            {"observed", o.observed ? number(*o.observed) : ordered_json(nullptr)},
                            {"holds", o.holds}});
  return {{"rule", evidence.rule},
          {"fired", evidence.fired},
          {"label", label_name(evidence.label)},
          {"candidates", label_list(evidence.candidates)},
          {"confidence", evidence.confidence},
          {"basis", evidence.basis},
          {"fp16_risk", evidence.fp16_risk},
          {"observations", observations},
          {"says", evidence.says},
          {"source", evidence.source}};
}

ordered_json risk_reason_json(const Fp16RiskReason& reason) {
  ordered_json item = {{"kind", risk_kind_name(reason.kind)},
                       {"tensor", reason.tensor.empty() ? ordered_json(nullptr) : ordered_json(reason.tensor)},
                       {"role", reason.tensor.empty() ? ordered_json(nullptr) : ordered_json(role_name(reason.role))},
                       {"value", number(reason.value)}};
  if (reason.kind == Fp16RiskKind::kRange || reason.kind == Fp16RiskKind::kDocumented)
    item["rule"] = reason.rule;
  else if (reason.kind != Fp16RiskKind::kActivation)
    item["values"] = reason.values;
  if (reason.kind == Fp16RiskKind::kActivation) item["role"] = "module";
  if (!reason.source.empty()) item["source"] = reason.source;
  return item;
}

ordered_json record_json(const TrainingRecord& record) {
  ordered_json fields = ordered_json::array();
  for (const RecordField& field : record.fields) fields.push_back({{"key", field.key}, {"value", field.value}});
  return {{"kind", record_kind_name(record.kind)},
          {"label", label_name(record.label)},
          {"confidence", record_confidence(record.label)},
          {"fields", fields},
          {"files", record.files},
          {"describes", "the run that saved this checkpoint (often a fine-tune), not necessarily pretraining"},
          {"basis", record_basis(record.kind)}};
}

ordered_json documented_json(const std::optional<Documented>& documented) {
  if (!documented) return nullptr;
  return {{"id", documented->id},
          {"precision", precision_name(documented->precision)},
          {"label", label_name(documented->label)},
          {"grade", grade_name(documented->grade)},
          {"confidence", documented->confidence},
          {"matched_by", match_kind_name(documented->matched_by)},
          {"matched", documented->matched},
          {"base_model", documented->base_model},
          {"describes", documented->base_model ? "the pretraining of the base model this one was fine-tuned from"
                                               : "the pretraining of this model (or of the base it was fine-tuned "
                                                 "from, when it was)"},
          {"source", documented->source},
          {"quote", documented->quote.empty() ? ordered_json(nullptr) : ordered_json(documented->quote)}};
}

ordered_json advice_json(const std::optional<Advice>& advice) {
  if (!advice) return nullptr;
  ordered_json plans = ordered_json::array();
  for (const ToolPlan& plan : advice->plans)
    plans.push_back({{"target", plan_target_name(plan.target)},
                     {"tool", plan.tool},
                     {"precision", run_precision_name(plan.precision)},
                     {"setting", plan.setting}});
  ordered_json keep = ordered_json::array();
  for (const KeepModule& module : advice->keep_in_fp32)
    keep.push_back({{"module", module.module}, {"basis", keep_basis_name(module.basis)}, {"why", module.why}});
  const GpuClass& gpu = advice->gpu;
  return {{"gpu",
           {{"name", gpu.assumed ? ordered_json(nullptr) : ordered_json(gpu.name)},
            {"compute_capability",
             gpu.cpu || gpu.assumed ? ordered_json(nullptr) : ordered_json(fmt::format("{}.{}", gpu.major, gpu.minor))},
            {"bf16", gpu.bf16()},
            {"describes", gpu.describe()}}},
          {"why", advice->why},
          {"plans", plans},
          {"keep_in_fp32", keep},
          {"gguf_keep", advice->gguf_keep},
          {"gguf_unnamed", advice->gguf_unnamed}};
}

ordered_json verdict_json(const Verdict& verdict) {
  ordered_json evidence = ordered_json::array();
  for (const RuleEvidence& item : verdict.evidence) evidence.push_back(evidence_json(item));
  ordered_json reasons = ordered_json::array();
  for (const Fp16RiskReason& reason : verdict.fp16_risk_reasons) reasons.push_back(risk_reason_json(reason));
  ordered_json records = ordered_json::array();
  for (const TrainingRecord& record : verdict.records) records.push_back(record_json(record));
  ordered_json conflicts = ordered_json::array();
  for (const Conflict& conflict : verdict.conflicts)
    conflicts.push_back({{"kind", conflict_kind_name(conflict.kind)}, {"detail", conflict.detail}});
  return {{"label", label_name(verdict.label)},
          {"candidates", label_list(verdict.candidates)},
          {"confidence", verdict.confidence},
          {"decided_by", verdict_basis_name(verdict.decided_by)},
          {"fp16_risk", verdict.fp16_risk()},
          {"fp16_risk_reasons", reasons},
          {"records", records},
          {"documented", documented_json(verdict.documented)},
          {"conflicts", conflicts},
          {"advice", advice_json(verdict.advice)},
          {"evidence", evidence},
          {"hints",
           {{"stored_dtypes", verdict.hints.stored_dtypes},
            {"config_dtype", verdict.hints.config_dtype ? ordered_json(*verdict.hints.config_dtype) : nullptr}}}};
}

ordered_json tensor_json(const TensorReport& tensor) {
  bool sliced = !tensor.parts.empty() && !tensor.replicated;  // the whole tensor's shape is recorded nowhere
  ordered_json item = {{"name", tensor.name},
                       {"dtype", dtype_name(tensor.dtype)},
                       {"shape", sliced ? ordered_json(nullptr) : ordered_json(tensor.shape)},
                       {"numel", tensor.numel},
                       {"analyzed", tensor.stats.has_value()}};
  const TensorStats* s = tensor.stats ? &*tensor.stats : nullptr;
  bool values = s != nullptr && s->has_values();
  item["abs_min"] = values ? number(s->abs_min) : ordered_json(nullptr);
  item["abs_max"] = values ? number(s->abs_max) : ordered_json(nullptr);
  item["norm"] = s ? number(s->norm()) : ordered_json(nullptr);
  item["zeros"] = s ? ordered_json(s->zeros) : ordered_json(nullptr);
  item["nans"] = s ? ordered_json(s->nans) : ordered_json(nullptr);
  item["infs"] = s ? ordered_json(s->infs) : ordered_json(nullptr);
  item["group"] = group_name(tensor.group);
  const std::optional<Layer>& layer = tensor.layer;
  item["layer"] = layer ? ordered_json({{"stack", layer->stack}, {"index", layer->index}}) : ordered_json(nullptr);
  item["precision"] = s ? precision_json(*s) : ordered_json(nullptr);
  item["role"] = role_name(tensor.role);
  item["shares_storage_with"] = tensor.shares_storage_with ? ordered_json(*tensor.shares_storage_with) : nullptr;
  if (tensor.torch_name) item["torch_name"] = *tensor.torch_name;
  if (!tensor.parts.empty()) item["parts"] = {{"shapes", tensor.parts}, {"replicated", tensor.replicated}};
  if (tensor.scaled_by) item["scaled_by"] = tensor.scaled_by->describe();
  if (std::optional<uint64_t> stored = tensor.scaled_by ? tensor.scaled_by->stored_values() : std::nullopt)
    item["sparsity"] = {{"stored", *stored},
                        {"logical", tensor.numel},
                        {"zeros_fraction", s && tensor.numel > 0 ? number(static_cast<double>(s->zeros) /
                                                                          static_cast<double>(tensor.numel))
                                                                 : ordered_json(nullptr)}};
  return item;
}

ordered_json safety_json(const std::optional<Safety>& safety) {
  if (!safety) return nullptr;
  ordered_json imports = ordered_json::array();
  for (const SafetyImport& item : safety->imports)
    imports.push_back({{"module", item.module},
                       {"name", item.name},
                       {"spelling", item.spelling.empty() ? ordered_json(nullptr) : ordered_json(item.spelling)},
                       {"class", global_class_name(item.judgement.kind)},
                       {"family", item.judgement.kind == GlobalClass::kDangerous
                                      ? ordered_json(danger_family_name(item.judgement.family))
                                      : ordered_json(nullptr)},
                       {"why", item.judgement.why.empty() ? ordered_json(nullptr) : ordered_json(item.judgement.why)},
                       {"file", item.file},
                       {"offset", item.offset},
                       {"called", item.called}});
  ordered_json tampering = ordered_json::array();
  for (const SafetyTampering& item : safety->tampering)
    tampering.push_back(
        {{"kind", tampering_name(item.kind)}, {"detail", item.detail}, {"file", item.file}, {"offset", item.offset}});
  ordered_json custom_code = ordered_json::array();
  for (const CustomCode& item : safety->custom_code)
    custom_code.push_back(
        {{"file", item.file},
         {"classes", item.classes},
         {"named_by", item.named_by.empty() ? ordered_json(nullptr) : ordered_json(item.named_by)},
         {"repository", item.repository.empty() ? ordered_json(nullptr) : ordered_json(item.repository)},
         {"consent", code_consent_name(item.consent)},
         {"why", item.why.empty() ? ordered_json(nullptr) : ordered_json(item.why)}});
  return {{"verdict", safety_verdict_name(safety->verdict())},
          {"says", safety_text(*safety)},
          {"imports", imports},
          {"tampering", tampering},
          {"custom_code", custom_code},
          {"unverified", safety->unverified},
          {"files", safety->files}};
}

ordered_json warnings_json(const std::vector<Warning>& warnings) {
  ordered_json items = ordered_json::array();
  for (const Warning& warning : warnings)
    items.push_back({{"code", warning_code_name(warning.code)}, {"message", warning.message()}});
  return items;
}

/// null for a model; an adapter's writer, the base it names and, where the base was found here, its own verdict.
ordered_json adapter_json(const ModelReport& model) {
  if (!model.adapter) return nullptr;
  ordered_json base_scan = nullptr;
  if (const std::optional<BaseScan>& base = model.base_scan) {
    ordered_json error = nullptr;
    if (base->error) error = {{"code", to_string(base->error->code)}, {"message", base->error->message}};
    base_scan = {{"path", base->path},
                 {"label", label_name(base->verdict.label)},
                 {"candidates", label_list(base->verdict.candidates)},
                 {"confidence", base->verdict.confidence},
                 {"decided_by", verdict_basis_name(base->verdict.decided_by)},
                 {"error", error}};
  }
  const Adapter& adapter = *model.adapter;
  return {{"format", adapter_format_name(adapter.format)},
          {"base_model", adapter.base_model ? ordered_json(*adapter.base_model) : ordered_json(nullptr)},
          {"found_by", adapter.found_by},
          {"base_scan", base_scan}};
}

/// JSON keeps the reasons alone (docs/json-schema.md: `gate_failures` is a list of strings).
ordered_json gate_reasons(const std::vector<GateFailure>& failures) {
  ordered_json reasons = ordered_json::array();
  for (const GateFailure& failure : failures) reasons.push_back(failure.reason);
  return reasons;
}

}  // namespace

ordered_json model_json(const ModelReport& model) {
  ordered_json tensors = ordered_json::array();
  for (const TensorReport& tensor : model.tensors) tensors.push_back(tensor_json(tensor));
  ordered_json error = nullptr;
  if (model.error) error = {{"code", to_string(model.error->code)}, {"message", model.error->message}};
  ordered_json json = {{"input", model.input},
                       {"path", model.path},
                       {"format", model.format.empty() ? ordered_json(nullptr) : ordered_json(model.format)},
                       {"files", model.files},
                       {"values_read", model.values_read},
                       {"metadata", model.metadata},
                       {"adapter", adapter_json(model)},
                       {"summary", model.values_read || model.headers_read ? summary_json(model.summary) : nullptr},
                       {"buffers", model.values_read ? value_summary_json(model.buffers) : nullptr},
                       {"verdict", model.values_read ? verdict_json(model.verdict) : nullptr},
                       {"storage_cast", storage_cast_json(model.summary)},
                       {"tensors", tensors},
                       {"warnings", warnings_json(model.warnings)},
                       {"safety", safety_json(model.safety)},
                       {"inventory", inventory_json(model)},
                       {"error", error},
                       {"gate_failures", gate_reasons(model.gate_failures)}};
  if (model.bytes_transferred) json["bytes_transferred"] = *model.bytes_transferred;  // remote models only
  // --headers-only weighs no verdict; the documented precision needs no values and is shown on its own.
  if (model.headers_read) json["documented"] = documented_json(model.verdict.documented);
  return json;
}

ordered_json model_line_json(const ModelReport& model) {
  ordered_json line = {{"type", "model"}};
  line.update(model_json(model));
  if (model.list_position) line["list_position"] = {model.list_position->input, model.list_position->model};
  return line;
}

ordered_json batch_summary_json(const ScanReport& report) {
  BatchCounts counts = count_batch(report);
  ordered_json line = {{"type", "summary"},
                       {"summary",
                        {{"models", report.models.size()},
                         {"scanned", report.models.size() - counts.failed},
                         {"failed", counts.failed},
                         {"gate_failures", counts.gate_failed},
                         {"labels", labels_json(counts.labels)}}}};
  if (!counts.safety.empty()) line["summary"]["safety"] = counts.safety;  // --safety-only: models per verdict
  if (report.shard)
    line["summary"]["shard"] = {{"index", report.shard->shard.index},
                                {"count", report.shard->shard.count},
                                {"inputs_digest", report.shard->inputs_digest},
                                {"inputs", report.shard->inputs}};
  return line;
}

ordered_json scan_document(ordered_json models) {
  return {{"schema_version", kSchemaVersion},
          {"tool", {{"name", "precdetect"}, {"version", PRECDETECT_VERSION}}},
          {"models", std::move(models)}};
}

ordered_json to_json(const ScanReport& report) {
  ordered_json models = ordered_json::array();
  for (const ModelReport& model : report.models) models.push_back(model_json(model));
  return scan_document(std::move(models));
}

std::string json_text(const ordered_json& document, int indent) {
  return document.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace precdetect
