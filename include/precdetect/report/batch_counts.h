#pragma once
/// What a batch came to: models per label, failures, gate failures (the JSONL summary and the table's last line).

#include <cstddef>
#include <map>
#include <string>

#include "precdetect/report/report.h"

namespace precdetect {

struct BatchCounts {
  std::map<Label, size_t> labels;        ///< scanned models per verdict label (none under --safety-only)
  std::map<std::string, size_t> safety;  ///< under --safety-only: models per safety verdict ("safe", ...)
  size_t failed = 0;                     ///< models that could not be scanned
  size_t gate_failed = 0;                ///< models that violated a gate (a failed one only --fail-if-unsafe)
  InventoryCounts files;                 ///< the files of every model's inventory, by disposition

  /// Counts one model: failed, or scanned with `label` and whether it violated a gate.
  void add(bool model_failed, Label label, bool violated_a_gate);
};

BatchCounts count_batch(const ScanReport& report);

}  // namespace precdetect
