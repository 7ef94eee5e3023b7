#pragma once
/// A PEFT adapter's adapter_config.json, read for classify (which reads no file): where PEFT's loader looks for it,
/// beneath the model's root.

#include <nlohmann/json.hpp>
#include <optional>

#include "precdetect/discover/discover.h"

namespace precdetect {

/// adapter_config.json beside the weights of `source` (a folder's, or a file's named adapter_model.*: a folder of
/// checkpoints may hold one adapter beside other files; beside a remote model's first file): nullopt where there is
/// none, a discarded value where it is there but cannot be read (a link out of the model among the reasons) or
/// parsed. Read beneath the model's root.
std::optional<nlohmann::json> read_peft_config(const ModelSource& source);

}  // namespace precdetect
