#pragma once
/// Where one stored tensor lives: what a format parser yields, before any of the tensor's bytes are read.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "precdetect/core/dtype.h"

namespace precdetect {

/// How a quantized weight's stored values become the values the model computes with.
enum class ScaleScheme {
  kProduct,  ///< fp8 value x scale, in float32
  /// MLX's affine quantization: `bits`-bit codes packed LSB first in uint32 words, each code q of a group becoming
  /// scale x q + bias, each operation rounded to the scales' dtype as mx.dequantize computes
  kAffine,
  /// Integer codes with zero points (GPTQ, AWQ, compressed-tensors' pack-quantized): each code q of group g in
  /// row r becoming scale[r, g] x (q - zero[r, g]), rounded once to the scales' dtype as their kernels compute it
  /// (the integer difference is exact there)
  kZeroPoint,
  /// bitsandbytes' 4-bit weights (nf4, fp4): 4-bit codes two to a byte, high nibble first, over the flattened
  /// weight; each code indexes `quant_map`, times its block's absmax in float32, then cast to the stored dtype
  kBlockwise4bit,
  /// bitsandbytes' LLM.int8 weights: int8 codes x their row's SCB / 127 in float32
  kInt8Rows,
  /// optimum-quanto's weights (QuantoCodes): each code times its scale, rounded to the scales' dtype; 2- and 4-bit
  /// codes then minus their float shift, rounded again (or, with an integer shift, scale x (code - shift))
  kQuanto,
  /// Float codes in groups of block_cols with one 8-bit scale each (OCP's microscaling: gpt-oss's MXFP4, MLX's
  /// mxfp4, nvfp4 and mxfp8 modes; ScaleLink::format): fp4 e2m1 codes two to a byte, low nibble first, or fp8 e4m3
  /// codes a byte each, times their group's scale (e8m0: 2^(s - 127); nvfp4: e4m3) in float32, then rounded to
  /// bfloat16, the dtype their dequantizers return
  kMicroscaling,
  /// compressed-tensors' nvfp4-pack-quantized: fp4 e2m1 codes two to a byte, low nibble first, in groups of
  /// block_cols; each times (its group's e4m3 scale / the global scale, ScaleLink::global_scale) in float32, then
  /// rounded to bfloat16, as its NVFP4PackedCompressor.decompress computes
  kNvfp4,
  /// Integer codes stored one per int8 (compressed-tensors' int-quantized): scale x (code - zero point) per row or
  /// group, rounded once to the scales' dtype as its dequantize computes (the integer difference is exact there)
  kInt8Codes,
  /// torchao's Int8Tensor, IntxUnpackedToInt8Tensor and Float8Tensor (quantize/torchao.cpp): int8 codes less their
  /// block's zero point, or float8 values, times the block's scale in float32, then cast to ScaleLink::result, the
  /// dtype their dequantize returns
  kTorchao,
  /// ONNX's DequantizeLinear (QDQ models: onnxruntime's quantizer): integer codes of the weight's own shape, each
  /// (code - zero point) x scale in float32 as onnxruntime computes it, then rounded to the scale's dtype; one scale
  /// and zero point for the tensor, one per slice along ScaleLink::axis, or one per block of ScaleLink::block_size
  /// along it
  kDequantizeLinear,
};

/// optimum-quanto's weight qtypes a checkpoint stores, by the names its quantization map gives them.
enum class QuantoType { kInt2, kInt4, kInt8, kFloat8E4M3, kFloat8E5M2 };

/// kQuanto's parts beside the scales (ScaleLink::tensor), as QModuleMixin's state dict flattens a frozen weight:
/// `X.weight._data` (int8 or fp8 codes, the weight's own shape) or, for 2 and 4 bits, `X.weight._data._data`
/// (PackedTensor: codes of the rows of the grouped weight packed in uint8 along its first dimension, row r of n in
/// packed row r mod ceil(n x bits / 8), at bit bits x (r div ceil(n x bits / 8))), `X.weight._scale`,
/// `X.weight._shift`.
struct QuantoCodes {
  QuantoType type = QuantoType::kInt8;
  std::string codes;  ///< the stored tensor's name (the record is renamed `X.weight`)
  std::string shift;  ///< 2 and 4 bits: float (the group's minimum, negated) or uint8 (a zero point)
  int64_t rows = 0;   ///< rows of the unpacked codes: the groups (or output rows), one scale and shift each
};

/// kBlockwise4bit's tensors beside the absmax (ScaleLink::tensor), as bitsandbytes' QuantState.as_dict writes them.
struct Blockwise4bitParts {
  std::string quant_map;         ///< the 16 float32 values a code stands for (nf4's or fp4's)
  std::string quant_state;       ///< uint8 bytes of JSON: quant_type, blocksize, dtype, shape, nested_*
  std::string nested_absmax;     ///< nested (double) quantization: the absmax is itself 8-bit codes whose
  std::string nested_quant_map;  ///< blocks scale by these; both empty without it
};

/// Integer codes (or zero points) packed in 32-bit words, as a grid of rows and columns: the stored tensor holds
/// that grid, or its transpose, with one dimension's codes sharing words as a dense bit stream, LSB first (a code
/// may straddle two words at 3, 5, 6 or 7 bits), or in AWQ's interleaved order.
struct PackedGrid {
  std::string tensor;       ///< the int32 tensor holding the words
  bool transposed = false;  ///< stored as [columns, rows] of the grid (GPTQ's qweight is [in / 8, out])
  int packed_dim = 1;       ///< the stored dimension along which codes share words
  bool awq_order = false;   ///< 4-bit codes in AWQ's order within each word: 0, 2, 4, 6, 1, 3, 5, 7
  int offset = 0;           ///< added to each stored code to give its value (compressed-tensors: -2^(bits-1))
};

/// kZeroPoint's parts beside the scales (ScaleLink::tensor): the weight's codes and where to find each
/// value's zero point and group.
struct ZeroPointCodes {
  PackedGrid codes;                 ///< the weight's own tensor, as [out, in]
  std::optional<PackedGrid> zeros;  ///< as [out, groups]; none: symmetric, every zero point 0
  bool scales_transposed = false;   ///< scales stored [groups, out] (GPTQ, AWQ), not [out, groups]
  std::string group_index;          ///< GPTQ's g_idx: each input column's group; empty: column / group size
  std::string shape_tensor;         ///< compressed-tensors' weight_shape: [out, in] as int64 values
};

/// A weight stored narrow whose scales are another tensor (a scheme of quantize/): each value the model computes
/// with comes from the stored value and the scale of its block, `block_rows` x `block_cols` of the weight's rows
/// (its first dimension) and columns (the others, flattened; for kAffine the unpacked codes).
struct ScaleLink {
  std::string tensor;  ///< the scale tensor's name
  int64_t block_rows = 1, block_cols = 1;
  ScaleScheme scheme = ScaleScheme::kProduct;
  std::string bias;                             ///< kAffine: the biases tensor's name
  int bits = 0;                                 ///< kAffine, kZeroPoint: bits per code
  std::optional<ZeroPointCodes> zero_point;     ///< kZeroPoint's codes, zero points and groups
  std::optional<Blockwise4bitParts> blockwise;  ///< kBlockwise4bit's code table and state
  std::optional<QuantoCodes> quanto;            ///< kQuanto's codes, qtype and shift
  std::string format;        ///< kMicroscaling: the mode, as MLX names it: "mxfp4", "nvfp4" or "mxfp8"
  std::string global_scale;  ///< kNvfp4: the weight_global_scale tensor's name
  std::string
      zero_points;  ///< kInt8Codes, kTorchao, kDequantizeLinear: the zero points' tensor's name (empty: symmetric)
  DType result = DType::F32;  ///< kTorchao: the dtype the dequantized values are cast to
  int64_t axis = 0;           ///< kDequantizeLinear: the dimension its scales run along (the node's, made >= 0)
  int64_t block_size = 0;     ///< kDequantizeLinear: codes per scale along `axis` (opset 21); 0: one per slice
};

/// The names of every tensor `link` reads beside the weight: its scales, and the biases, zero points, group index,
/// shape, code map, state and nested parts its scheme names.
inline std::vector<std::string> linked_tensors(const ScaleLink& link) {
  std::vector<std::string> names = {link.tensor, link.bias, link.global_scale, link.zero_points};
  if (link.zero_point)
    names.insert(names.end(), {link.zero_point->zeros ? link.zero_point->zeros->tensor : "",
                               link.zero_point->group_index, link.zero_point->shape_tensor});
  if (link.blockwise)
    names.insert(names.end(), {link.blockwise->quant_map, link.blockwise->quant_state, link.blockwise->nested_absmax,
                               link.blockwise->nested_quant_map});
  std::erase(names, std::string());
  return names;
}

/// What a tensor is to the model: a parameter (its weights; "model" in reports), a buffer (state the model keeps
/// but does not learn: BatchNorm statistics, attention masks, rotary tables), or training state saved beside it.
/// Only parameters enter the verdict, as seed 000 walks model.parameters(). A quantized weight's scales are a role
/// of their own: the weight is analyzed with them (TensorRecord::scaled_by), never they as weights.
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
  /// A quantized weight's scales (FP8 with `weight_scale_inv` blocks, compressed-tensors' `weight_scale`): its
  /// statistics are those of its dequantized values.
  std::optional<ScaleLink> scaled_by;
  /// Quantized by a scheme precdetect does not read, named here as its config or its tensors name it
  /// ("compressed-tensors nvfp4-pack-quantized"; quantize/unread.cpp): counted, never analyzed as the floats or
  /// integers it is stored as, and so out of the verdict. Empty for any other tensor.
  std::string unread_scheme;
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
