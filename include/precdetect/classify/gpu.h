#pragma once
/// The machine a plan is made for (`--gpu`): a GPU class by name or compute capability, or the CPU. What matters to
/// the advice is whether it computes in bf16: NVIDIA GPUs do from compute capability 8.0 (Ampere) on; on older
/// ones (T4, V100) torch emulates bf16 slowly where it allows it at all and vLLM refuses it.

#include <optional>
#include <string>
#include <string_view>

namespace precdetect {

struct GpuClass {
  std::string name;          ///< "T4", "sm_75", "cpu"; the default: "a GPU with bf16"
  int major = 8, minor = 0;  ///< compute capability; 0.0 for the CPU
  bool cpu = false;
  bool assumed = false;  ///< no --gpu: planned for any GPU with bf16 (compute capability 8.0 or newer)
  bool bf16() const { return !cpu && major >= 8; }
  /// "T4 (compute capability 7.5)", "the CPU", "a GPU with bf16 (compute capability 8.0 or newer)"
  std::string describe() const;
};

/// The plan's default machine when no --gpu is given.
GpuClass assumed_gpu();

/// A GPU name from NVIDIA's compute capability table (T4, V100, A100, A10G, L4, H100, RTX 4090, ...; case and
/// spaces ignored), a compute capability ("7.5", "sm_75", "sm75"), or "cpu"; nullopt for anything else.
std::optional<GpuClass> parse_gpu(std::string_view text);

}  // namespace precdetect
