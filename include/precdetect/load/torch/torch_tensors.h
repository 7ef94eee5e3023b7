#pragma once
/// From a torch pickle's object graph to named, validated tensor records; shared by every PyTorch format.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "precdetect/load/checkpoint.h"
#include "precdetect/load/pickle/pickle.h"

namespace precdetect {

/// A tensor found in the object graph, named by the path that leads to it.
struct FoundTensor {
  std::string name;
  const pickle::Tensor* tensor = nullptr;
  TensorRole role = TensorRole::kModel;
  bool role_from_file = false;  ///< found inside a pickled nn.Module, whose dicts say parameter or buffer
  bool reached = true;          ///< false: no key path leads to it (named "(unreached).N", N its rebuild order)
  /// A part of a tensor subclass (torchao's `qdata`, `scale`, ...; load/tensor_subclasses.h): the subclass's name
  /// (`X.weight`, the part being `X._weight_qdata`) and its description, as Checkpoint::tensor_subclasses holds it.
  std::string subclass_of, subclass;
};

/// True for a key under which a checkpoint keeps an optimizer's state ("optimizer", "optim", "optimizer_states"):
/// its tensors get TensorRole::kOptimizer.
bool names_optimizer(const std::string& key);

/// Walks the graph from the pickle's root: dict keys, list indexes and object attributes joined by '.', with
/// nn.Module's `_parameters`/`_buffers`/`_modules` levels left out, so a pickled model's tensors read like its
/// state_dict. A wrapper key at the root (state_dict, model_state_dict, model, module, net, network) is
/// stripped; tensors under a root key naming an optimizer get TensorRole::kOptimizer; inside a pickled module,
/// whatever is not in `_parameters` (its `_buffers`, tensors held as plain attributes) gets TensorRole::kBuffer;
/// a tensor saved on its own is "(root)". Every tensor the pickle rebuilt that no path reaches follows, as
/// "(unreached).N". Cycles are skipped; absurd nesting throws Error(kInvalidPickle).
std::vector<FoundTensor> find_tensors(const pickle::Result& pickle, const std::filesystem::path& path);

/// Where a storage's bytes lie in the file.
struct StorageLocation {
  uint64_t offset = 0;
  uint64_t nbytes = 0;
};
using LocateStorage = std::function<StorageLocation(const pickle::Storage&)>;

/// Appends one record per found tensor to `checkpoint` (file `file`), after checking that each view lies inside
/// its storage (Error kStorageTooSmall otherwise). Tensors of dtypes precdetect cannot represent are listed in a
/// warning. Views of one storage are marked `shares_storage_with` the first; an exact repeat (tied weights) is
/// reported but not counted twice. Unreached tensors are named in a warning.
void add_torch_tensors(Checkpoint& checkpoint, const std::vector<FoundTensor>& found, const LocateStorage& locate,
                       size_t file, bool big_endian);

/// What a pickle holds besides tensors: the globals it asked to call and precdetect did not (a warning: nothing
/// is ever executed) and the training records in its object graph.
void add_pickle_findings(Checkpoint& checkpoint, const pickle::Result& pickle, const std::filesystem::path& path);

}  // namespace precdetect
