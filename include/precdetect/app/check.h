#pragma once
/// The check of a model in memory (precdetect.check): analyze -> classify over its live tensors, judged as a scan
/// judges a checkpoint's files.

#include <nlohmann/json.hpp>
#include <string>

#include "precdetect/app/options.h"
#include "precdetect/app/scan.h"
#include "precdetect/load/live_model.h"

namespace precdetect {

/// What the check knows of the model beside its tensors.
struct LiveModelInfo {
  std::string name;                         ///< how reports name it (its `_name_or_path`, or its class)
  std::string format;                       ///< "module" (parameters and buffers from the module) or "state_dict"
  nlohmann::json config;                    ///< its config's object (the registry's identity); null when it has none
  std::vector<ActivationPeak> activations;  ///< what a forward pass measured (precdetect.probe); empty for check()
};

/// The report on `model`, with `options`' filter and gates (its rules and registry are `judgement`). Never throws
/// precdetect::Error: a model that cannot be checked comes back with `error` set. It has no files and no safety
/// examination (nothing is unpickled), and holds no reference to the model's tensors.
ModelReport check_live_model(const LiveModel& model, const LiveModelInfo& info, const ScanOptions& options,
                             const Judgement& judgement);

}  // namespace precdetect
