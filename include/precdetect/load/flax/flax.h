#pragma once
/// Flax checkpoints (flax.serialization.msgpack_serialize: transformers' flax_model.msgpack): a msgpack tree of
/// string-keyed maps whose leaves are arrays, each a msgpack extension (type 1, or 3 for a scalar) holding
/// [shape, dtype name, raw row-major bytes]; an array over 1 GiB is a map {"__msgpack_chunked_array__": true,
/// "shape": {"0": ...}, "chunks": {"0": flat part, ...}}.

#include <memory>
#include <string>

#include "precdetect/load/checkpoint.h"

namespace precdetect {

/// True when the file is named as Flax names its checkpoints (*.msgpack): msgpack has no magic number.
bool looks_like_flax(const ByteSource& source);

/// Reads the Flax file that is file `file` of `checkpoint`: every array a tensor named by its path
/// ("encoder/block/0/layer/0/SelfAttention/q/kernel"), with the name PyTorch gives it in transformers
/// (TensorRecord::torch_name). Arrays stay in the mapping; a chunked array is joined when analyzed (through a
/// DecodedSource). Leaves that are no arrays (a step counter) and arrays of dtypes precdetect cannot read are
/// listed in a kDtypesNotRead warning. Returns "flax". Errors: kInvalidMsgpack (damaged msgpack, an array
/// whose bytes do not match its shape and dtype, a malformed chunked array, keys that are not strings or twice in
/// one map).
FileFormat read_flax(Checkpoint& checkpoint, size_t file);

/// The file opened as Flax when it is named so, else nullptr; it holds no pickles.
std::unique_ptr<FormatFile> open_flax(const ByteSource& source);

/// The name transformers' PyTorch model gives a Flax parameter path: "/" becomes ".", and a last part `kernel`,
/// `embedding` or `scale` becomes `weight` ("encoder/final_layer_norm/weight" -> "encoder.final_layer_norm.weight").
std::string torch_name_of_flax_path(std::string_view path);

}  // namespace precdetect
