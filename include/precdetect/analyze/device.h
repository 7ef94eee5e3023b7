#pragma once
/// Where the statistics are computed: our CPU kernel, or libtorch ops on a CUDA device (the CUDA plugin).

#include <string>

namespace precdetect {

struct ComputeDevice {
  bool cuda = false;
  int index = 0;  ///< CUDA device ordinal
  std::string name() const { return cuda ? "cuda:" + std::to_string(index) : "cpu"; }
};

/// True for "cpu", "cuda", "cuda:N" and "auto".
bool is_device_spec(const std::string& spec);

/// Resolves a --device value ("auto" picks CUDA when a GPU driver is present and the CUDA plugin loads and sees a
/// GPU; a plugin that cannot load is a warning on stderr there, and the CPU). Throws Error(kDevice) when CUDA is
/// asked for and not available (the plugin's one-line reason), or the ordinal does not exist.
ComputeDevice resolve_device(const std::string& spec);

/// CUDA devices the CUDA plugin sees, loading it first (0 when it cannot be loaded).
int cuda_device_count();

}  // namespace precdetect
