#pragma once
/// The terminal table in seed 000's spirit: one row per model, and per-tensor rows with --verbose.

#include <string>

#include "precdetect/report/report.h"

namespace precdetect {

/// The table text. Failed models get a row that names their error code.
std::string render_table(const ScanReport& report, bool per_tensor);

}  // namespace precdetect
