#include "precdetect/report/batch_counts.h"

namespace precdetect {

void BatchCounts::add(bool model_failed, Label label, bool violated_a_gate) {
  gate_failed += violated_a_gate;
  if (model_failed) {
    ++failed;
    return;
  }
  ++labels[label];
}

BatchCounts count_batch(const ScanReport& report) {
  BatchCounts counts;
  for (const ModelReport& model : report.models) {
    if (model.inventory) counts.files.add(*model.inventory);
    if (!model.values_read && !model.error) {  // --safety-only: no label to count, its safety instead
      counts.gate_failed += !model.gate_failures.empty();
      if (model.safety) ++counts.safety[std::string(safety_verdict_name(model.safety->verdict()))];
      continue;
    }
    counts.add(model.error.has_value(), model.verdict.label, !model.gate_failures.empty());
  }
  return counts;
}

}  // namespace precdetect
