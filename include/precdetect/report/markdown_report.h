#pragma once
/// --format markdown: seed 000's results table (name | abs min | abs max | norm min | norm max) with the verdict
/// and fp16 cast counts, ready to paste into an issue or a forum thread.

#include <string>

#include "precdetect/report/report.h"

namespace precdetect {

/// One row per model; with `per_group`, a table of each model's groups under it.
std::string render_markdown(const ScanReport& report, bool per_group);

}  // namespace precdetect
