#pragma once
/// The one detection of a file's format, from its first bytes (and an .npz's name): the load chain, the safety
/// examination and `diff` (through the load chain) all ask it, so they never disagree about the same file. Each
/// format's own `looks_like_*` lives in its folder; the order here is the only place they are weighed.

#include <string_view>

#include "precdetect/core/named_enum.h"
#include "precdetect/load/source/byte_source.h"

namespace precdetect {

enum class FileFormat {
  kGguf,
  kFlax,  ///< flax_model.msgpack
  kHdf5,  ///< Keras / TF weights
  kSafetensors,
  kNpz,          ///< a zip named .npz: NumPy arrays
  kTorchZip,     ///< torch.save >= 1.6, TorchScript
  kTorchLegacy,  ///< torch.save before 1.6: pickles between raw storages
  kNemo,         ///< a tar holding model_weights.ckpt
  kTorchTar,     ///< torch.save before 0.4: a tar of pickles and storages
  kNpy,
  kPickle,  ///< a bare pickle stream: never a checkpoint of weights by itself
  kUnknown,
};

/// "gguf", "flax", "hdf5", "safetensors", "npz", "torch_zip", "torch_legacy", "nemo", "torch_tar", "npy",
/// "pickle", "unknown".
std::string_view file_format_name(FileFormat format);

/// The format `source` holds, the first of the list above whose sniff claims it; kUnknown when none does.
FileFormat detect_format(const ByteSource& source);

}  // namespace precdetect

template <>
struct fmt::formatter<precdetect::FileFormat>
    : precdetect::NamedEnumFormatter<precdetect::FileFormat, precdetect::file_format_name> {};
