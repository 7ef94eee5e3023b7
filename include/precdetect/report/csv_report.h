#pragma once
/// --format csv: one row per tensor of every scanned model (RFC 4180), for spreadsheets and pandas.

#include <string>

#include "precdetect/report/report.h"

namespace precdetect {

/// Header row, then the tensors of each model in order. Failed models have no rows (their error is on stderr
/// and in the exit status); empty cells are statistics a tensor does not have.
std::string render_csv(const ScanReport& report);

}  // namespace precdetect
