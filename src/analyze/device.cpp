#include "precdetect/analyze/device.h"

#include <fmt/format.h>

#include <filesystem>
#include <regex>

#include "precdetect/analyze/device_backend.h"
#include "precdetect/core/error.h"

namespace precdetect {
namespace {

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
  static const int count = [] {
    try {
      return cuda_backend().device_count();
    } catch (const Error&) {
      return 0;
    }
  }();
  return count;
}

ComputeDevice resolve_device(const std::string& spec) {
  if (spec == "cpu" || (spec == "auto" && !gpu_driver_present())) return {};
  if (spec == "auto") {
    try {
      return {.cuda = cuda_backend().device_count() > 0};
    } catch (const Error& e) {  // a GPU without a torch that fits the plugin: the CPU, and why
      fmt::print(stderr, "precdetect: warning: --device auto: {}; scanning on the CPU\n", e.what());
      return {};
    }
  }
  int index = spec.size() > 5 ? std::stoi(spec.substr(5)) : 0;
  int gpus = 0;
  try {
    gpus = cuda_backend().device_count();
  } catch (const Error& e) {
    throw Error(ErrorCode::kDevice, fmt::format("--device {}: {}", spec, e.what()));
  }
  if (gpus == 0) throw Error(ErrorCode::kDevice, fmt::format("--device {}: no CUDA device is available", spec));
  if (index >= gpus)
    throw Error(ErrorCode::kDevice, fmt::format("--device {}: only {} CUDA device(s) present", spec, gpus));
  return {.cuda = true, .index = index};
}

}  // namespace precdetect
