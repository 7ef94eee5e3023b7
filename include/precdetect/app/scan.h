#pragma once
/// The scan command: discover -> load -> analyze -> classify for each input, then report.

#include "precdetect/analyze/analyzer.h"
#include "precdetect/analyze/stats_cache.h"
#include "precdetect/app/options.h"
#include "precdetect/classify/registry.h"
#include "precdetect/classify/rules.h"
#include "precdetect/report/report.h"

namespace precdetect {

/// What the verdicts are judged by: the range rules and the registry of documented precisions.
struct Judgement {
  const RuleSet& rules;
  const Registry& registry;
};

/// Scans one input with `analyzer`, taking tensor statistics from `cache` where it has them (nullptr: no cache).
/// Never throws precdetect::Error: a model that cannot be scanned comes back with `error` set.
ModelReport scan_model(const std::string& input, const ScanOptions& options, const Judgement& judgement,
                       Analyzer& analyzer, StatsCache* cache);

/// Runs the whole command: scans every input, prints the table or JSON, writes --output, and returns the exit
/// code. Throws Error for problems that concern the whole run (bad --rules or --registry, unavailable --device).
ExitCode run_scan(const ScanOptions& options);

}  // namespace precdetect
