#pragma once
/// The weight formats a model's folder may hold, in the order a folder's verdict prefers them (docs/using.md): one
/// table for a local folder (discover.cpp) and a remote one (remote.cpp).

#include <span>
#include <string_view>

namespace precdetect {

struct WeightFormat {
  std::string_view name;                         ///< "safetensors", "pytorch", ... (the other_formats warning's)
  std::string_view index;                        ///< its shard index's file name; empty: the format has none
  std::span<const std::string_view> extensions;  ///< its files' extensions
  /// A remote folder is read in it: false for Keras and HDF5 (read through libhdf5, from a local file only) and
  /// torch.distributed.checkpoint folders (read beside their local `.metadata`).
  bool read_remotely = true;
};

/// Every weight format, most preferred first: safetensors, pytorch, flax, keras, tf, gguf, numpy, dcp, onnx.
std::span<const WeightFormat> weight_formats();

/// torch.distributed.checkpoint's index: the pickle that says where each tensor's chunks lie in the folder's
/// .distcp files (the dcp format's `index`).
inline constexpr std::string_view kDcpMetadata = ".metadata";

}  // namespace precdetect
