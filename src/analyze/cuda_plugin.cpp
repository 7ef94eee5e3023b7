#include <dlfcn.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>

#include "precdetect/analyze/device_backend.h"
#include "precdetect/core/error.h"
#include "precdetect/load/hdf5/helper_process.h"

namespace precdetect {
namespace {

/// The torch package (site-packages/torch) or unpacked libtorch archive whose libraries the plugin runs with:
/// PRECDETECT_LIBTORCH, which the pip package's launcher sets to the torch of the Python it runs in, else the
/// one this build's plugin was compiled against.
std::filesystem::path torch_folder() {
  if (const char* named = std::getenv("PRECDETECT_LIBTORCH"); named && *named) return named;
  return PRECDETECT_BUILD_TORCH_DIR;
}

/// "2.11.0+cu130": a torch package's version.py, or a libtorch archive's build-version.
std::optional<std::string> torch_release(const std::filesystem::path& folder) {
  static const std::regex kVersionLine(R"(__version__\s*=\s*['"]([^'"]+)['"])");
  std::ifstream version_py(folder / "version.py");
  for (std::string line; std::getline(version_py, line);)
    if (std::smatch match; std::regex_search(line, match, kVersionLine)) return match[1];
  std::ifstream build_version(folder / "build-version");
  if (std::string line; std::getline(build_version, line) && !line.empty()) return line;
  return std::nullopt;
}

/// "2.11.0+cu130" -> "2.11": libtorch's C++ ABI holds within a minor release, not across.
std::string series(const std::string& release) {
  std::smatch match;
  static const std::regex kSeries(R"(^(\d+\.\d+))");
  return std::regex_search(release, match, kSeries) ? match[1].str() : release;
}

/// The dynamic linker's complaint, on one line, for the end of ours.
std::string linker_error() {
  const char* error = dlerror();
  std::string text = error ? error : "unknown error";
  return text.substr(0, text.find('\n'));
}

struct LoadedBackend {
  const CudaBackend* backend = nullptr;
  std::string missing;  ///< why there is none
};

LoadedBackend load_backend() {
  if (std::string_view(PRECDETECT_PLUGIN_TORCH_VERSION).empty())
    return {.missing = "this precdetect was built without torch, hence without its CUDA plugin"};
  std::filesystem::path folder = torch_folder();
  if (folder.empty())
    return {.missing = "no torch to run CUDA with: set PRECDETECT_LIBTORCH to a torch package or libtorch folder"};
  std::optional<std::string> release = torch_release(folder);
  if (!release)
    return {.missing = fmt::format("{} is not a torch package or libtorch folder (no version.py)", folder.string())};
  if (series(*release) != series(PRECDETECT_PLUGIN_TORCH_VERSION))
    return {.missing = fmt::format("the CUDA plugin runs with torch {}.*, and {} holds torch {}",
                                   series(PRECDETECT_PLUGIN_TORCH_VERSION), folder.string(), *release)};
  std::filesystem::path torch_cuda = folder / "lib" / "libtorch_cuda.so";
  std::error_code ec;
  if (!std::filesystem::exists(torch_cuda, ec))
    return {.missing = fmt::format("torch {} at {} has no CUDA support", *release, folder.string())};
  // libtorch_cuda by its path, global: the plugin's own libtorch dependencies then resolve to these, by soname.
  if (!dlopen(torch_cuda.c_str(), RTLD_NOW | RTLD_GLOBAL))
    return {.missing = fmt::format("torch {} at {} cannot be loaded ({})", *release, folder.string(), linker_error())};
  std::filesystem::path plugin = helper_path("libprecdetect_cuda.so");
  void* handle = dlopen(plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return {.missing = fmt::format("the CUDA plugin cannot be loaded ({})", linker_error())};
  auto entry = reinterpret_cast<CudaBackendEntry>(dlsym(handle, kCudaBackendEntry));
  if (!entry) return {.missing = fmt::format("{} has no {}", plugin.string(), kCudaBackendEntry)};
  return {.backend = entry()};
}

const LoadedBackend& loaded_backend() {
  static const LoadedBackend loaded = load_backend();
  return loaded;
}

}  // namespace

const CudaBackend& cuda_backend() {
  const LoadedBackend& loaded = loaded_backend();
  if (!loaded.backend) throw Error(ErrorCode::kDevice, loaded.missing);
  return *loaded.backend;
}

}  // namespace precdetect
