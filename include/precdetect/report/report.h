#pragma once
/// Stage 5's input: what a scan found, as plain data. Analyzer and classifier fill it; renderers print it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "precdetect/analyze/summary.h"
#include "precdetect/analyze/tensor_groups.h"
#include "precdetect/analyze/tensor_stats.h"
#include "precdetect/classify/classifier.h"
#include "precdetect/core/dtype.h"
#include "precdetect/load/tensor_record.h"

namespace precdetect {

struct TensorReport {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t numel = 0;
  std::optional<TensorStats> stats;  ///< nullopt for integer and skipped dtypes (census only)
  std::string_view group;            ///< tensor_group(name)
  std::optional<Layer> layer;        ///< tensor_layer(name)
  TensorRole role = TensorRole::kModel;
  std::optional<std::string> shares_storage_with;  ///< the first tensor on the same storage
};

struct ModelError {
  std::string code;     ///< ErrorCode name, e.g. "header_too_small"
  std::string message;  ///< names the file
};

struct ModelReport {
  std::string input;
  std::string path;
  std::string format;
  std::vector<std::string> files;
  ModelSummary summary;
  Verdict verdict;
  std::vector<TensorReport> tensors;
  std::vector<std::string> warnings;
  std::optional<ModelError> error;
  std::vector<std::string> gate_failures;  ///< one reason per violated --expect/--fail-on/... gate
};

struct ScanReport {
  std::vector<ModelReport> models;
};

}  // namespace precdetect
