#pragma once
/// Stages 2 and 3 for a model already in memory (precdetect.check): its tensors, as DLPack describes them, read where
/// they live, as records with no file behind them and no copy made of a contiguous host tensor. Any framework's arrays
/// (torch, NumPy, JAX) arrive this way; nothing here links a framework.

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "precdetect/load/dlpack.h"
#include "precdetect/load/live_model.h"

namespace precdetect {

struct LiveTensor {
  std::string name;
  const dlpack::Tensor* values = nullptr;  ///< borrowed: the caller keeps it alive until the check is done
  /// The stored dtype where DLPack cannot say it: an fp8 tensor comes as a uint8 view, with its dtype named.
  std::optional<DType> dtype;
  /// What the module says it is (a parameter: kModel, a buffer: kBuffer); nullopt for a state dict's entry,
  /// which the rules' buffer names place as they place a file's.
  std::optional<TensorRole> role;
  /// Tensors with the same non-zero key share one storage (tied weights); 0 when the caller cannot tell.
  uint64_t storage_key = 0;
  /// Why the caller already knows it cannot be read (a framework's own notion: meta, sparse, a freed storage).
  std::optional<std::string> unreadable;
};

/// Fills `into` with the bytes of tensor `index` (its elements in row-major order) from byte `offset` on: how a
/// GPU tensor reaches the host in bounded chunks when the CUDA plugin cannot run.
using CopyToHost = std::function<void(size_t index, uint64_t offset, std::span<std::byte> into)>;

/// Records for `tensors`, and for each one its storage sharing as the file formats report it: a second name of
/// the same view is counted once. A tensor that cannot be read where it is, is skipped with its reason in a
/// warning, as is each of `not_tensors` (a state dict's names whose values are no tensors, with their types): a
/// device precdetect cannot read (not the host, not CUDA), a dtype it cannot represent, negative strides, or what
/// the caller marked unreadable. The statistics are computed where each tensor lives: our kernel over a host
/// tensor's own memory; a CUDA tensor by the CUDA plugin on its GPU, or, where the plugin cannot run, copied to
/// the host in chunks of at most 64 MiB through `copy_to_host` (the model's warnings then say so).
LiveModel open_live_model(std::vector<LiveTensor> tensors, std::vector<std::string> not_tensors,
                          CopyToHost copy_to_host);

}  // namespace precdetect
