#pragma once
/// Where the statistics are computed: our CPU kernel, or libtorch ops on a CUDA device.

#include <string>

namespace precdetect {

struct ComputeDevice {
  bool cuda = false;
  int index = 0;  ///< CUDA device ordinal
  std::string name() const { return cuda ? "cuda:" + std::to_string(index) : "cpu"; }
};

/// True for "cpu", "cuda", "cuda:N" and "auto".
bool is_device_spec(const std::string& spec);

/// Resolves a --device value ("auto" picks CUDA when libtorch sees a GPU). Throws Error(kDevice) when CUDA
/// is asked for and not available, or the ordinal does not exist.
ComputeDevice resolve_device(const std::string& spec);

/// CUDA devices libtorch can use, loading its CUDA support first (0 without it). Ask this, never
/// torch::cuda::*, before CUDA support is loaded: libtorch remembers a "no CUDA" answer for the process.
int cuda_device_count();

}  // namespace precdetect
