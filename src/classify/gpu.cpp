#include "precdetect/classify/gpu.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "precdetect/core/whole_number.h"

namespace precdetect {
namespace {

struct KnownGpu {
  std::string_view name;  ///< lower case, no spaces
  int major, minor;
};

/// NVIDIA's table of compute capabilities (https://developer.nvidia.com/cuda-gpus), the data-centre and
/// workstation GPUs people fine-tune and serve on, and the consumer cards of each generation.
constexpr std::array<KnownGpu, 31> kKnownGpus = {{
    {"k80", 3, 7},      {"p4", 6, 1},   {"p40", 6, 1},     {"p100", 6, 0},      {"v100", 7, 0},
    {"titanv", 7, 0},   {"t4", 7, 5},   {"rtx2080", 7, 5}, {"rtx2080ti", 7, 5}, {"quadrortx8000", 7, 5},
    {"a100", 8, 0},     {"a30", 8, 0},  {"a10", 8, 6},     {"a10g", 8, 6},      {"a40", 8, 6},
    {"a16", 8, 6},      {"a2", 8, 6},   {"rtx3090", 8, 6}, {"rtx3080", 8, 6},   {"rtxa6000", 8, 6},
    {"l4", 8, 9},       {"l40", 8, 9},  {"l40s", 8, 9},    {"rtx4090", 8, 9},   {"rtx6000ada", 8, 9},
    {"h100", 9, 0},     {"h200", 9, 0}, {"gh200", 9, 0},   {"b200", 10, 0},     {"gb200", 10, 0},
    {"rtx5090", 12, 0},
}};

std::string squeezed(std::string_view text) {
  std::string out;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c)) && c != '-' && c != '_')
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// "7.5", "sm_75", "sm75" as major and minor.
std::optional<std::pair<int, int>> compute_capability(std::string_view text) {
  std::string key = squeezed(text);
  if (key.starts_with("sm") && key.size() >= 4 && key.size() <= 5 && std::all_of(key.begin() + 2, key.end(), ::isdigit))
    return std::pair{std::stoi(key.substr(2, key.size() - 3)), key.back() - '0'};
  size_t dot = key.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 2 != key.size()) return std::nullopt;
  std::optional<int> major = whole_number<int>(std::string_view(key).substr(0, dot));
  if (!major || !std::isdigit(static_cast<unsigned char>(key.back()))) return std::nullopt;
  int minor = key.back() - '0';
  return std::pair{*major, minor};
}

}  // namespace

std::string GpuClass::describe() const {
  if (cpu) return "the CPU";
  if (assumed) return "a GPU with bf16 (compute capability 8.0 or newer)";
  return fmt::format("{} (compute capability {}.{})", name, major, minor);
}

GpuClass assumed_gpu() { return {.name = "a GPU with bf16", .assumed = true}; }

std::optional<GpuClass> parse_gpu(std::string_view text) {
  std::string key = squeezed(text);
  if (key == "cpu") return GpuClass{.name = "cpu", .major = 0, .minor = 0, .cpu = true};
  for (const KnownGpu& gpu : kKnownGpus)
    if (key == gpu.name || key == fmt::format("nvidia{}", gpu.name) || key == fmt::format("geforce{}", gpu.name) ||
        key == fmt::format("tesla{}", gpu.name))
      return GpuClass{.name = std::string(text), .major = gpu.major, .minor = gpu.minor};
  if (auto cc = compute_capability(text); cc && cc->first >= 3 && cc->first <= 12)
    return GpuClass{.name = std::string(text), .major = cc->first, .minor = cc->second};
  return std::nullopt;
}

}  // namespace precdetect
