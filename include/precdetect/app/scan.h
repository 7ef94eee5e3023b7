#pragma once
/// The scan command: discover -> load -> analyze -> classify for each input, then report.

#include <functional>
#include <span>

#include "precdetect/analyze/analyzer.h"
#include "precdetect/analyze/model_analysis.h"
#include "precdetect/analyze/stats_cache.h"
#include "precdetect/app/options.h"
#include "precdetect/classify/judge.h"
#include "precdetect/discover/inventory.h"
#include "precdetect/report/report.h"

namespace precdetect {

/// Moves `analysis` into `report`: its warnings after the report's own, the summary, buffers and tensors.
void take_analysis(ModelReport& report, ModelAnalysis analysis);

/// Marks `report` failed with `error`: no partial statistics or verdict stay.
void fail_model(ModelReport& report, ModelError error);

/// Whether an adapter's base model is scanned too (an adapter's base is scanned without following further).
enum class BaseFollowing { kYes, kNo };

/// Scans one input with `analyzer`, taking tensor statistics from `cache` where it has them (nullptr: no cache).
/// An adapter's base, where it lies on this machine, is scanned with it and its verdict taken. `inventory`, the
/// files of its input accounted to it (discover/inventory.h), is judged into its safety with its own files, also
/// when the model cannot be read (a folder of no weights); `named`, who named `input` (discover()). Never throws
/// precdetect::Error: a model that cannot be scanned comes back with `error` set.
ModelReport scan_model(const std::string& input, const ScanOptions& options, const Judgement& judgement,
                       Analyzer& analyzer, StatsCache* cache, BaseFollowing base_following = BaseFollowing::kYes,
                       std::optional<Inventory> inventory = std::nullopt, Named named = Named::kByUser);

/// What scan_all tells as it goes, each call made under one lock (any may be empty): how many models it will
/// scan, then each model as a worker starts it and once it is finished (its gates judged).
struct ScanEvents {
  std::function<void(size_t models)> planned;
  std::function<void(const std::string& input)> started;
  std::function<void(const ModelReport& model)> finished;
};

/// Scans every input of the run (PATHs, --from lists, the HF cache, --recursive, --shard) on --jobs workers and
/// judges the gates; prints nothing. Throws Error for problems that concern the whole run (bad --rules or
/// --registry, unavailable --device, nothing to scan).
ScanReport scan_all(const ScanOptions& options, const ScanEvents& events = {});

/// The scan command: scan_all with the progress line, then the table or JSON, --output, --report and the
/// warnings; returns the exit code.
ExitCode run_scan(const ScanOptions& options);

}  // namespace precdetect
