#include "precdetect/analyze/device.h"

#include <ATen/detail/CUDAHooksInterface.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <torch/cuda.h>

#include <filesystem>
#include <regex>

#include "precdetect/core/error.h"

namespace precdetect {
namespace {

/// Why libtorch's CUDA support could not be loaded; empty once it is.
struct CudaSupport {
  std::string missing;
};

/// libtorch_cuda.so is not linked but loaded here, once, beside the libtorch_cpu.so this process runs: its static
/// initialisation registers CUDA with libtorch, and would cost every CPU-only run time and memory at start-up
/// (docs/benchmarks.md, "Figures behind the code").
const CudaSupport& load_cuda_support() {
  static const CudaSupport support = [] {
    Dl_info torch_cpu{};
    if (!dladdr(reinterpret_cast<void*>(&torch::cuda::device_count), &torch_cpu) || !torch_cpu.dli_fname)
      return CudaSupport{"libtorch_cpu.so not found in this process"};
    auto library = std::filesystem::path(torch_cpu.dli_fname).parent_path() / "libtorch_cuda.so";
    if (!dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL))
      return CudaSupport{fmt::format("this libtorch has no usable CUDA support ({})", dlerror())};
    if (!at::detail::getCUDAHooks().isBuilt())  // a CUDA query before the load pinned libtorch's CPU-only answer
      return CudaSupport{"libtorch's CUDA support was queried before it was loaded (a precdetect bug)"};
    return CudaSupport{};
  }();
  return support;
}

/// An NVIDIA driver node (native Linux, or WSL2's GPU paravirtualisation): only then is CUDA worth loading for
/// --device auto.
bool gpu_driver_present() {
  std::error_code ec;
  return std::filesystem::exists("/dev/nvidiactl", ec) || std::filesystem::exists("/dev/dxg", ec);
}

}  // namespace

bool is_device_spec(const std::string& spec) {
  static const std::regex kSpec(R"(cpu|auto|cuda(:[0-9]{1,3})?)");
  return std::regex_match(spec, kSpec);
}

int cuda_device_count() {
  static const int count = load_cuda_support().missing.empty() ? static_cast<int>(torch::cuda::device_count()) : 0;
  return count;
}

ComputeDevice resolve_device(const std::string& spec) {
  if (spec == "cpu" || (spec == "auto" && !gpu_driver_present())) return {};
  int gpus = cuda_device_count();
  if (spec == "auto") return {.cuda = gpus > 0};
  int index = spec.size() > 5 ? std::stoi(spec.substr(5)) : 0;
  if (!load_cuda_support().missing.empty())
    throw Error(ErrorCode::kDevice, fmt::format("--device {}: {}", spec, load_cuda_support().missing));
  if (gpus == 0) throw Error(ErrorCode::kDevice, fmt::format("--device {}: no CUDA device is available", spec));
  if (index >= gpus)
    throw Error(ErrorCode::kDevice, fmt::format("--device {}: only {} CUDA device(s) present", spec, gpus));
  return {.cuda = true, .index = index};
}

}  // namespace precdetect
