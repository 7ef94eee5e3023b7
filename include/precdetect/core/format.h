#pragma once
/// The formats precdetect reads, one row each: the data half of the format table, which discovery, the help text,
/// the safety examination's message and the tests read. The open half is load/file_format.cpp: each format's
/// open_*, in the chain that detects them (docs/architecture.md, "Adding a format").

#include <span>
#include <string>
#include <string_view>

#include "precdetect/core/named_enum.h"

namespace precdetect {

/// A file's format, as load/file_format's open_format detects it and its reader reads it.
enum class FileFormat {
  kGguf,
  kFlax,   ///< flax_model.msgpack
  kHdf5,   ///< Keras / TF weights
  kKeras,  ///< Keras 3's .keras archive: a zip of config.json and model.weights.h5
  kSafetensors,
  kNpz,          ///< a zip named .npz: NumPy arrays
  kTorchZip,     ///< torch.save >= 1.6
  kTorchScript,  ///< torch.jit.save: a torch zip holding constants.pkl (its reader tells it from kTorchZip)
  kTorchLegacy,  ///< torch.save before 1.6: pickles between raw storages
  kNemo,         ///< a tar holding model_weights.ckpt
  kTorchTar,     ///< torch.save before 0.4: a tar of pickles and storages
  kNpy,
  kDcp,         ///< torch.distributed.checkpoint: a folder's .metadata pickle, indexing its .distcp files
  kOnnx,        ///< a protobuf ModelProto named .onnx
  kCompressed,  ///< a file compressed whole (gzip, bzip2, xz, lzma, zlib, zstd): joblib's and pandas' compressors
  kPickle,      ///< a bare pickle stream: never a checkpoint of weights by itself
  kUnknown,
};

/// What a file of a format begins with, which its sniff reads; kName: a format told by its file's name alone.
enum class Magic { kSafetensors, kGguf, kMsgpack, kHdf5, kZip, kPickle, kTar, kNpy, kCompressed, kName };

/// One row of the file formats.
struct FileFormatInfo {
  FileFormat id;
  std::string_view name;                         ///< "torch_zip": how messages and tests name it
  std::string_view report_name;                  ///< what a report's models[].format says: "pytorch-zip"
  std::string_view title;                        ///< for people (--help): "PyTorch zip"
  std::span<const std::string_view> extensions;  ///< its files' usual extensions; the sniff decides, not these
  Magic magic;
  /// A single-file diffusers pipeline may be saved in it, so that app/scan looks for its components.
  bool single_file_pipeline = false;
};

/// Every file format, in FileFormat's order (kUnknown last).
std::span<const FileFormatInfo> file_formats();
const FileFormatInfo& format_info(FileFormat format);

/// "gguf", "flax", "hdf5", "keras", "safetensors", "npz", "torch_zip", "torchscript", "torch_legacy", "nemo",
/// "torch_tar", "npy", "dcp", "onnx", "compressed", "pickle", "unknown".
std::string_view file_format_name(FileFormat format);

/// How a model's folder groups its weight files: one table for a local folder (discover.cpp) and a remote one
/// (remote.cpp), in the order a folder's verdict prefers them (docs/using.md).
struct WeightFormat {
  std::string_view name;                ///< "safetensors", "pytorch", ... (the other_formats warning's)
  std::string_view index;               ///< its shard index's file name; empty: the format has none
  std::span<const FileFormat> formats;  ///< the file formats its files are read in
  /// Its files' extensions: its file formats' extensions, in their order, each once (checked at compile time).
  std::span<const std::string_view> extensions;
  /// A remote folder is read in it: false for Keras and HDF5 (read through libhdf5, from a local file only) and
  /// torch.distributed.checkpoint folders (read beside their local `.metadata`).
  bool read_remotely = true;
};

/// Every weight format, most preferred first: safetensors, pytorch, flax, keras, tf, gguf, numpy, dcp, onnx.
std::span<const WeightFormat> weight_formats();

/// torch.distributed.checkpoint's index: the pickle that says where each tensor's chunks lie in the folder's
/// .distcp files (the dcp format's `index`).
inline constexpr std::string_view kDcpMetadata = ".metadata";

/// True when a file of `extension` (".ckpt") may be a single-file diffusers pipeline: a format such a pipeline is
/// saved in (FileFormatInfo::single_file_pipeline) uses the extension.
bool may_hold_a_pipeline(std::string_view extension);

/// The formats the help text lists: each weight format's file formats' titles and its extensions ("Flax msgpack
/// (.msgpack)"), in the weight formats' order, then bare pickles; joined by "; ".
std::string format_list();

/// The headers the safety examination reads, as its message for a file none claims names them: "safetensors,
/// GGUF, msgpack, HDF5, zip, pickle, tar, npy or compressed" (every Magic a format begins with, in Magic's order).
std::string examined_headers();

}  // namespace precdetect

template <>
struct fmt::formatter<precdetect::FileFormat>
    : precdetect::NamedEnumFormatter<precdetect::FileFormat, precdetect::file_format_name> {};
