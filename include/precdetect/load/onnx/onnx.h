#pragma once
/// ONNX models (`.onnx`, onnx/onnx.proto's ModelProto), read by precdetect's own protobuf walker
/// (load/onnx/protobuf.h says why not libprotobuf): every initializer, every Constant node's value and every other
/// tensor a node's attributes hold, in the graph and its subgraphs, is a tensor. Values stored in raw_data or in
/// external data files are analyzed where they lie; values in the typed fields (float_data, int32_data, ...) or in a
/// Constant's value_float(s) and value_int(s) are decoded when analyzed, then dropped.

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "precdetect/load/checkpoint.h"

namespace precdetect {

/// The file an external tensor's `location` names: relative to the model's folder. Throws Error naming `model` and
/// `tensor`: kPathEscape for a location that is absolute or climbs out of the folder (a `..` part), kInvalidOnnx for
/// one that holds a NUL byte (or, beside a remote model, names no file): a model never reads a file it was not
/// shipped with (path traversal: onnx's own CVE-2022-25882). Links are followed, as the Hugging Face cache's
/// snapshots link each file to its blob. Beside a remote model (a URL) the location is the URL of that name in the
/// model's folder, each segment percent-encoded once.
std::filesystem::path onnx_external_path(const std::filesystem::path& model, std::string_view location,
                                         std::string_view tensor);

/// Reads the ONNX model that is file `file` of `checkpoint`. Initializers are tensors named as the graph names
/// them (torch.onnx.export's parameter names; a subgraph's prefixed by its scope, onnx_graph.h); the tensors in nodes'
/// attributes (Constant nodes' values, named by the node's output; ConstantOfShape's `value`, named `<node>/value`)
/// are buffers computed by the exporter (TensorRecord::computed_from_config), out of the verdict but in fp16 cast
/// safety. Sparse initializers and sparse attributes (a Constant's `sparse_value`) are their values' records, named
/// as onnx names them, standing for the dense tensor (TensorRecord::sparse_of: its zeros counted, never
/// materialized). Tensors of types precdetect does not read (strings, complex128, 4-, 2- and 6-bit types) are listed
/// in a kDtypesNotRead warning. External
/// data files are mapped beside the model (the checkpoint's file becomes a JoinedSource of them, wrapped in a
/// DecodedSource for the typed fields). Returns "onnx". Errors: kInvalidOnnx naming the offset and tensor
/// (read_onnx_graph's, an unknown data type, values whose count or size is not the shape's, external data outside its
/// file or outside the model's folder, a sparse tensor that breaks onnx's checker's rules: onnx_sparse.h), kNotFound
/// (an external data file that is not there), kIo.
FileFormat read_onnx(Checkpoint& checkpoint, size_t file);

/// The file opened as ONNX when its name ends in `.onnx` (a protobuf has no magic number), else nullptr; it holds
/// no pickles.
std::unique_ptr<FormatFile> open_onnx(const ByteSource& source);

}  // namespace precdetect
