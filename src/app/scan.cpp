#include "precdetect/app/scan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>

#include "precdetect/analyze/analyzer.h"
#include "precdetect/app/output.h"
#include "precdetect/core/error.h"
#include "precdetect/discover/discover.h"
#include "precdetect/discover/hf_cache.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/report/json_report.h"
#include "precdetect/report/table_report.h"

namespace precdetect {
namespace {

void analyze_checkpoint(ModelReport& report, const Checkpoint& checkpoint, const TensorFilter& filter,
                        const ComputeDevice& device) {
  std::vector<std::string> skipped;
  uint64_t optimizer_tensors = 0;
  for (const TensorRecord& record : checkpoint.tensors) {
    if (!filter.selects(record.name)) continue;
    // Optimizer state and second references to a tied tensor are reported, but kept out of the model's numbers.
    bool in_summary = record.role == TensorRole::kModel && record.counted;
    optimizer_tensors += record.role == TensorRole::kOptimizer;
    if (in_summary) report.summary.add_stored(record);
    TensorReport tensor{.name = record.name,
                        .dtype = record.dtype,
                        .shape = record.shape,
                        .numel = record.numel,
                        .role = record.role,
                        .shares_storage_with = record.shares_storage_with};
    if (dtype_kind(record.dtype) == DTypeKind::kFloat) {
      tensor.stats = analyze_tensor(checkpoint, record, device);
      if (in_summary) report.summary.add_stats(*tensor.stats);
      checkpoint.files[record.file]->release(record.offset, record.storage_nbytes);
    } else if (dtype_kind(record.dtype) == DTypeKind::kSkipped) {
      skipped.push_back(fmt::format("{} ({})", record.name, dtype_name(record.dtype)));
    }
    report.tensors.push_back(std::move(tensor));
  }
  if (!skipped.empty())
    report.warnings.push_back(
        fmt::format("{} tensor(s) of dtypes precdetect cannot analyze were counted but not "
                    "analyzed: {}",
                    skipped.size(), fmt::join(skipped, ", ")));
  if (optimizer_tensors > 0)
    report.warnings.push_back(
        fmt::format("{} optimizer-state tensor(s) are reported apart (role \"optimizer\") and "
                    "kept out of the model statistics",
                    optimizer_tensors));
  if (report.summary.tensors == 0 && optimizer_tensors == 0)
    report.warnings.push_back("no tensor matches --include/--exclude; nothing to classify (widen the filter)");
  else if (report.summary.analyzed_tensors == 0)
    report.warnings.push_back("the model has no floating-point tensors; nothing to classify");
  if (report.summary.nans + report.summary.infs > 0)
    report.warnings.push_back(
        fmt::format("the weights hold {} NaN and {} Inf values: the checkpoint is damaged or "
                    "overflowed during training",
                    report.summary.nans, report.summary.infs));
}

Hints storage_hints(const ModelSummary& summary, const ModelSource& source) {
  Hints hints;
  for (const auto& [dtype, count] : summary.dtypes) hints.stored_dtypes.push_back(dtype);
  if (source.config) hints.config_dtype = read_config_dtype(*source.config);
  return hints;
}

}  // namespace

ModelReport scan_model(const std::string& input, const ScanOptions& options, const RuleSet& rules,
                       const ComputeDevice& device) {
  ModelReport report;
  report.input = report.path = input;
  try {
    ModelSource source = discover(input, hf_hub_cache());
    report.path = source.path.string();
    for (const auto& file : source.files) report.files.push_back(file.string());
    Checkpoint checkpoint = open_checkpoint(source);
    report.format = checkpoint.format;
    report.warnings = checkpoint.warnings;
    analyze_checkpoint(report, checkpoint, options.filter, device);
    report.verdict = classify(report.summary, rules, storage_hints(report.summary, source));
  } catch (const Error& e) {
    report.error = ModelError{std::string(to_string(e.code())), e.what()};
  } catch (const std::exception& e) {
    // Not ours (libtorch, the standard library): still one model's failure, never the batch's.
    report.error = ModelError{std::string(to_string(ErrorCode::kInternal)), fmt::format("{}: {}", input, e.what())};
  }
  if (report.error) {  // a failed model reports no partial statistics
    report.summary = {};
    report.tensors.clear();
    report.verdict = {};
  }
  return report;
}

ExitCode run_scan(const ScanOptions& options) {
  RuleSet rules = options.rules ? load_rules(*options.rules) : default_rules();
  ComputeDevice device = resolve_device(options.device);
  ScanReport report;
  bool any_failed = false;
  for (const std::string& input : options.inputs) {
    report.models.push_back(scan_model(input, options, rules, device));
    if (const auto& error = report.models.back().error) {
      fmt::print(stderr, "precdetect: {}\n", error->message);
      any_failed = true;
    }
  }
  publish(to_json(report), options.output, options.json,
          options.json ? std::string() : render_table(report, options.verbose));
  return any_failed ? ExitCode::kError : ExitCode::kSuccess;
}

}  // namespace precdetect
