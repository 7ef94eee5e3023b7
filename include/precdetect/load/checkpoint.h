#pragma once
/// Stage 2: open a model's weight files, whatever their format, as one list of tensor records.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "precdetect/core/warning.h"
#include "precdetect/discover/discover.h"
#include "precdetect/load/dequantize_node.h"
#include "precdetect/load/file_format.h"
#include "precdetect/load/pickle/pickle.h"
#include "precdetect/load/records/training_record.h"
#include "precdetect/load/source/byte_source.h"
#include "precdetect/load/tensor_record.h"

namespace precdetect {

struct Checkpoint {
  FileFormat format = FileFormat::kUnknown;        ///< what its files were read as (the last file's)
  std::vector<std::unique_ptr<ByteSource>> files;  ///< TensorRecord::file indexes this
  /// Each file opened in its format, in the order of `files` (over the bytes each was mapped as, which a reader
  /// may wrap: a NeMo archive's file becomes its weights member): the safety examination asks these for the
  /// pickles the files hold, so that no file's structure is read twice.
  std::vector<std::unique_ptr<FormatFile>> formats;
  std::vector<TensorRecord> tensors;    ///< file by file, in data order
  std::vector<TrainingRecord> records;  ///< what the training framework wrote down (training_records.h)
  std::vector<Warning> warnings;
  /// What the file says of the model in its own header, as a JSON object's text (reports print it whole): GGUF's
  /// key/values (the first file's, for a split GGUF). Empty for formats without one. Text rather than a JSON value:
  /// a checkpoint is moved and destroyed where nothing may throw, and nlohmann's values may.
  std::string metadata;
  /// The tensor subclasses the files store as their parts (torchao's Int8Tensor, Float8Tensor, ...), each described
  /// as torchao's flatten_tensor_state_dict writes it in a safetensors header (JSON text), by the logical tensor's
  /// name; the parts are records named as it names them (`X._weight_qdata` for `X.weight`). See tensor_subclasses.h.
  std::map<std::string, std::string> tensor_subclasses;
  /// What the files' exported graphs say they dequantize (ONNX's DequantizeLinear and QOperator nodes whose codes
  /// are stored), in the order the graphs hold them: quantize reads the weights (dequantize_linear).
  std::vector<DequantizeNode> dequantize_nodes;
  /// The files are model-parallel shards (ModelSource::model_parallel): a name may recur across files.
  bool model_parallel = false;
  /// When set, the pre-0.4 tar reader logs what every pickle imports and tampers here (its pickles lie between
  /// raw data, where only the reader finds them): how safety/examine reads that format.
  pickle::PickleLog* pickle_log = nullptr;
};

/// Maps every file and reads its header; with a shard index, checks that each indexed tensor is in its shard.
/// `mode` says how tensor bytes will be read. Throws Error: kUnknownFormat, kMissingTensor, kDuplicateTensor (a
/// name twice in the model, or twice in one file of model-parallel shards: never merged silently), or the
/// format's own codes (docs/errors.md).
Checkpoint open_checkpoint(const ModelSource& source, ReadMode mode = ReadMode::kMmap);

}  // namespace precdetect
