#include "precdetect/analyze/device.h"

#include <fmt/format.h>
#include <torch/cuda.h>

#include <regex>

#include "precdetect/core/error.h"

namespace precdetect {

bool is_device_spec(const std::string& spec) {
  static const std::regex kSpec(R"(cpu|auto|cuda(:[0-9]{1,3})?)");
  return std::regex_match(spec, kSpec);
}

ComputeDevice resolve_device(const std::string& spec) {
  int gpus = static_cast<int>(torch::cuda::device_count());
  if (spec == "cpu" || (spec == "auto" && gpus == 0)) return {};
  if (spec == "auto") return {.cuda = true};
  int index = spec.size() > 5 ? std::stoi(spec.substr(5)) : 0;
  if (gpus == 0) throw Error(ErrorCode::kDevice, fmt::format("--device {}: no CUDA device is available", spec));
  if (index >= gpus)
    throw Error(ErrorCode::kDevice, fmt::format("--device {}: only {} CUDA device(s) present", spec, gpus));
  return {.cuda = true, .index = index};
}

}  // namespace precdetect
