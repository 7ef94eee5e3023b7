#pragma once
/// Where one stored tensor lives: what a format parser yields, before any of the tensor's bytes are read.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "precdetect/core/dtype.h"

namespace precdetect {

/// What a tensor is to the model: a parameter (its weights; "model" in reports), a buffer (state the model keeps
/// but does not learn: BatchNorm statistics, attention masks, rotary tables), or training state saved beside it.
/// Only parameters enter the verdict, as seed 000 walks model.parameters(). A quantized weight's scales (and every
/// other tensor a quantization scheme reads it with) are a role of their own: the weight is analyzed with them
/// (quantize/linked_checkpoint.h), never they as weights.
enum class TensorRole { kModel, kBuffer, kOptimizer, kScale };

/// The role's name in reports: "model", "buffer", "optimizer", "scale".
constexpr std::string_view role_name(TensorRole role) {
  switch (role) {
    case TensorRole::kModel:
      return "model";
    case TensorRole::kBuffer:
      return "buffer";
    case TensorRole::kOptimizer:
      return "optimizer";
    case TensorRole::kScale:
      return "scale";
  }
  return "model";
}

/// How a tensor that a format stores in another framework's layout is rearranged into the tensor PyTorch holds
/// under TensorRecord::torch_name, as the usual converters rearrange it (what a diff across formats compares).
enum class TorchLayout {
  kSame,
  /// A Flax `kernel`: a Conv kernel HWIO is PyTorch's OIHW permuted (3, 2, 0, 1), any other kernel (a Dense
  /// one, [in, out]) is PyTorch's weight transposed, as transformers' load_flax_weights_in_pytorch_model converts.
  kFlaxKernel,
  /// llama.cpp's q or k of a llama model: within each of TensorRecord::rope_heads heads, the rows of the two
  /// rotary halves are interleaved (convert_hf_to_gguf's LlamaModel.permute).
  kRopeInterleaved,
  /// An ONNX exporter's Linear weight folded into its transpose for the MatMul it feeds (x @ W^T): a 2-D tensor
  /// whose axes are PyTorch's swapped.
  kTransposed,
};

/// Where a chunk of a tensor stored in parts (torch.distributed.checkpoint) sits in the whole tensor: the records
/// of one name are the whole tensor's chunks, which the loader checked tile it exactly (load/dcp/dcp_metadata.h).
struct ChunkOf {
  std::vector<int64_t> shape;    ///< the whole tensor's
  std::vector<int64_t> offsets;  ///< of this chunk's first element, per dimension
};

/// The dense tensor a sparse one (an ONNX SparseTensorProto) stands for: the record holds its stored values, [NNZ],
/// and the tensor is of `shape`, zero wherever no value is stored (its reader checked each value has a place of its
/// own). Never materialized: `numel` may be 2^60 with a handful of values.
struct SparseOf {
  std::vector<int64_t> shape;  ///< the dense tensor's
  uint64_t numel = 0;          ///< its elements: the stored values and the zeros around them
};

struct TensorRecord {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;  ///< empty: contiguous row-major (always so in safetensors)
  uint64_t numel = 0;
  uint64_t nbytes = 0;          ///< numel x element size: the tensor's own bytes
  uint64_t offset = 0;          ///< absolute offset in its file of the storage the tensor views
  uint64_t storage_nbytes = 0;  ///< bytes of that storage; the view lies inside it (checked by the parser)
  uint64_t storage_offset = 0;  ///< the view's first element within the storage, in elements of `dtype`
  size_t file = 0;              ///< index into Checkpoint::files
  bool big_endian = false;      ///< stored big-endian: bytes are swapped when loaded
  TensorRole role = TensorRole::kModel;
  /// The file says which role (a pickled nn.Module's `_parameters` and `_buffers`): names are not consulted.
  bool role_from_file = false;
  /// The name PyTorch gives this tensor, for a format that names it otherwise (a Flax path, llama.cpp's
  /// `blk.0.attn_q.weight`): how a diff pairs it with a PyTorch or safetensors checkpoint's tensor. nullopt when
  /// `name` is that name.
  std::optional<std::string> torch_name;
  TorchLayout torch_layout = TorchLayout::kSame;
  int64_t rope_heads = 0;  ///< kRopeInterleaved: the heads whose rows are interleaved (divides shape[0] / 2)
  /// Not converted from a checkpoint's weight but computed from the model's config by the converter that wrote the
  /// file (llama.cpp's `rope_freqs.weight`): a buffer, which a diff lists apart rather than as a changed model.
  bool computed_from_config = false;
  /// The first tensor reported on the same storage (tied weights, views); nullopt when the storage is its own.
  std::optional<std::string> shares_storage_with;
  /// False for a second reference to exactly the same view (tied weights): reported, counted once.
  bool counted = true;
  /// A value of an exported graph (an ONNX initializer or Constant): where it holds a NaN or an Inf (an exporter's
  /// -inf mask), it is the exporter's, a buffer, whatever operator reads it (analyze/model_analysis.cpp).
  bool graph_constant = false;
  /// Set on each chunk of a tensor stored in several (TensorRecord::shape is the chunk's): analysis joins them
  /// into the whole tensor, whose statistics are the chunks' merged. nullopt for a tensor stored whole.
  std::optional<ChunkOf> chunk_of;
  /// Set on a sparse tensor's stored values: analysis reports the dense tensor, its statistics the values' merged
  /// with those of its zeros (kernel/zero_stats.h); diff lists it as not compared. nullopt for a dense tensor.
  std::optional<SparseOf> sparse_of;
};

}  // namespace precdetect
