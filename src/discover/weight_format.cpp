#include "precdetect/discover/weight_format.h"

#include <array>

namespace precdetect {
namespace {

constexpr std::array<std::string_view, 1> kSafetensors = {".safetensors"};
constexpr std::array<std::string_view, 6> kPytorch = {".bin", ".pt", ".pth", ".ckpt", ".jit", ".nemo"};
constexpr std::array<std::string_view, 1> kFlax = {".msgpack"};
constexpr std::array<std::string_view, 1> kKeras = {".keras"};
constexpr std::array<std::string_view, 2> kTf = {".h5", ".hdf5"};
constexpr std::array<std::string_view, 1> kGguf = {".gguf"};
constexpr std::array<std::string_view, 2> kNumpy = {".npz", ".npy"};
constexpr std::array<std::string_view, 1> kDcp = {".distcp"};
constexpr std::array<std::string_view, 1> kOnnx = {".onnx"};

constexpr std::array<WeightFormat, 9> kWeightFormats = {{
    {"safetensors", "model.safetensors.index.json", kSafetensors},
    {"pytorch", "pytorch_model.bin.index.json", kPytorch},
    {"flax", "flax_model.msgpack.index.json", kFlax},
    // Keras 3's own format: its model.weights.h5 is the weights any .h5 beside holds
    {"keras", "", kKeras, /*read_remotely=*/false},
    {"tf", "tf_model.h5.index.json", kTf, /*read_remotely=*/false},
    {"gguf", "", kGguf},
    {"numpy", "", kNumpy},
    {"dcp", kDcpMetadata, kDcp, /*read_remotely=*/false},
    {"onnx", "", kOnnx},  // an export: its external data files (model.onnx_data) are read through it
}};

}  // namespace

std::span<const WeightFormat> weight_formats() { return kWeightFormats; }

}  // namespace precdetect
