#include "precdetect/load/file_format.h"

#include <algorithm>

#include "precdetect/load/flax/flax.h"
#include "precdetect/load/gguf/gguf.h"
#include "precdetect/load/hdf5/hdf5.h"
#include "precdetect/load/numpy/npy.h"
#include "precdetect/load/pickle/pickle_stream.h"
#include "precdetect/load/safetensors/safetensors.h"
#include "precdetect/load/source/zip_reader.h"
#include "precdetect/load/torch/torch_formats.h"

namespace precdetect {

std::string_view file_format_name(FileFormat format) {
  switch (format) {
    case FileFormat::kGguf:
      return "gguf";
    case FileFormat::kFlax:
      return "flax";
    case FileFormat::kHdf5:
      return "hdf5";
    case FileFormat::kSafetensors:
      return "safetensors";
    case FileFormat::kNpz:
      return "npz";
    case FileFormat::kTorchZip:
      return "torch_zip";
    case FileFormat::kTorchLegacy:
      return "torch_legacy";
    case FileFormat::kNemo:
      return "nemo";
    case FileFormat::kTorchTar:
      return "torch_tar";
    case FileFormat::kNpy:
      return "npy";
    case FileFormat::kPickle:
      return "pickle";
    case FileFormat::kUnknown:
      return "unknown";
  }
  return "unknown";
}

FileFormat detect_format(const ByteSource& source) {
  if (looks_like_gguf(source)) return FileFormat::kGguf;
  if (looks_like_flax(source)) return FileFormat::kFlax;
  if (looks_like_hdf5(source)) return FileFormat::kHdf5;
  if (looks_like_safetensors(source)) return FileFormat::kSafetensors;
  if (looks_like_zip(source)) return source.path().extension() == ".npz" ? FileFormat::kNpz : FileFormat::kTorchZip;
  if (looks_like_torch_legacy(source)) return FileFormat::kTorchLegacy;
  if (looks_like_nemo(source)) return FileFormat::kNemo;
  if (looks_like_tar(source)) return FileFormat::kTorchTar;
  if (looks_like_npy(source.view(0, std::min<uint64_t>(source.size(), 8)))) return FileFormat::kNpy;
  if (looks_like_pickle(source)) return FileFormat::kPickle;
  return FileFormat::kUnknown;
}

}  // namespace precdetect
