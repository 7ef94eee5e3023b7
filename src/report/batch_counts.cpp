#include "precdetect/report/batch_counts.h"

namespace precdetect {

BatchCounts count_batch(const ScanReport& report) {
  BatchCounts counts;
  for (const ModelReport& model : report.models) {
    if (model.error) {
      ++counts.failed;
      continue;
    }
    ++counts.labels[model.verdict.label];
    counts.gate_failed += !model.gate_failures.empty();
  }
  return counts;
}

}  // namespace precdetect
