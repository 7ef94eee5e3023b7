#pragma once
/// Stage 2 for a model already in memory (precdetect.check): its libtorch tensors where they live, as records,
/// with no file behind them and no copy made. The Python extension's side: it links libtorch, the program does not.

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <vector>

#include "precdetect/load/live_model.h"

namespace precdetect {

struct LiveTensor {
  std::string name;
  at::Tensor values;
  /// What the module says it is (a parameter: kModel, a buffer: kBuffer); nullopt for a state dict's entry,
  /// which the rules' buffer names place as they place a file's.
  std::optional<TensorRole> role;
};

/// Records for `tensors`, and for each one its storage sharing as the file formats report it: a second name of
/// the same view is counted once (tied weights). A tensor that cannot be read where it is, is skipped with its
/// reason in a warning, as is each of `not_tensors` (a state dict's names whose values are no tensors, with
/// their types): a meta or other non-CPU, non-CUDA tensor, a sparse or quantized one, one without storage
/// (a wrapper subclass such as DTensor), one whose storage no longer holds it (freed, as FSDP frees a sharded
/// parameter's), one of a dtype precdetect cannot represent. The model's statistics are computed where each tensor
/// lives: our kernel over a CPU tensor's own memory, libtorch ops on a CUDA tensor's device.
LiveModel open_live_model(std::vector<LiveTensor> tensors, std::vector<std::string> not_tensors = {});

}  // namespace precdetect
