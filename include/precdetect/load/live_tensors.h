#pragma once
/// Stage 2 for a model already in memory (precdetect.check): its tensors where they live, as records, with no
/// file behind them and no copy made.

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <vector>

#include "precdetect/core/warning.h"
#include "precdetect/load/tensor_record.h"

namespace precdetect {

struct LiveTensor {
  std::string name;
  at::Tensor values;
  /// What the module says it is (a parameter: kModel, a buffer: kBuffer); nullopt for a state dict's entry,
  /// which the rules' buffer names place as they place a file's.
  std::optional<TensorRole> role;
};

struct LiveModel {
  std::vector<TensorRecord> records;  ///< the tensors that can be read where they are, in the order given
  std::vector<at::Tensor> values;     ///< records[i]'s tensor (held: it cannot be freed while it is read)
  std::vector<Warning> warnings;      ///< the tensors skipped, each with why (kLiveTensorsSkipped)
};

/// Records for `tensors`, and for each one its storage sharing as the file formats report it: a second name of
/// the same view is counted once (tied weights). A tensor that cannot be read where it is, is skipped with its
/// reason in a warning, as is each of `not_tensors` (a state dict's names whose values are no tensors, with
/// their types): a meta or other non-CPU, non-CUDA tensor, a sparse or quantized one, one without storage
/// (a wrapper subclass such as DTensor), one whose storage no longer holds it (freed, as FSDP frees a sharded
/// parameter's), one of a dtype precdetect cannot represent.
LiveModel open_live_model(std::vector<LiveTensor> tensors, std::vector<std::string> not_tensors = {});

}  // namespace precdetect
