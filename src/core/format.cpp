#include "precdetect/core/format.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <vector>

#include "precdetect/core/named_enum.h"

namespace precdetect {
namespace {

using Extensions = std::span<const std::string_view>;

constexpr std::string_view kSafetensorsFiles[] = {".safetensors"};
constexpr std::string_view kTorchSaveFiles[] = {".bin", ".pt", ".pth", ".ckpt"};
constexpr std::string_view kTorchScriptFiles[] = {".pt", ".jit"};
constexpr std::string_view kTorchTarFiles[] = {".pt", ".pth"};
constexpr std::string_view kNemoFiles[] = {".nemo"};
constexpr std::string_view kFlaxFiles[] = {".msgpack"};
constexpr std::string_view kKerasFiles[] = {".keras"};
constexpr std::string_view kHdf5Files[] = {".h5", ".hdf5"};
constexpr std::string_view kGgufFiles[] = {".gguf"};
constexpr std::string_view kNpzFiles[] = {".npz"};
constexpr std::string_view kNpyFiles[] = {".npy"};
constexpr std::string_view kDcpFiles[] = {".distcp"};
constexpr std::string_view kOnnxFiles[] = {".onnx"};
constexpr std::string_view kCompressedFiles[] = {".gz", ".gzip", ".bz2", ".xz", ".lzma", ".z", ".zst", ".zlib"};
constexpr std::string_view kPickleFiles[] = {".pkl", ".pickle", ".joblib", ".dill"};

constexpr std::array<FileFormatInfo, 17> kFileFormats = {{
    {FileFormat::kGguf, "gguf", "gguf", "GGUF", kGgufFiles, Magic::kGguf},
    {FileFormat::kFlax, "flax", "flax", "Flax msgpack", kFlaxFiles, Magic::kMsgpack},
    {FileFormat::kHdf5, "hdf5", "hdf5", "Keras/TF HDF5", kHdf5Files, Magic::kHdf5},
    {FileFormat::kKeras, "keras", "keras", "Keras 3 archives", kKerasFiles, Magic::kZip},
    {FileFormat::kSafetensors, "safetensors", "safetensors", "safetensors", kSafetensorsFiles, Magic::kSafetensors,
     /*single_file_pipeline=*/true},
    {FileFormat::kNpz, "npz", "numpy", "NumPy archives", kNpzFiles, Magic::kZip},
    {FileFormat::kTorchZip, "torch_zip", "pytorch-zip", "PyTorch zip", kTorchSaveFiles, Magic::kZip,
     /*single_file_pipeline=*/true},
    {FileFormat::kTorchScript, "torchscript", "torchscript", "TorchScript", kTorchScriptFiles, Magic::kZip},
    {FileFormat::kTorchLegacy, "torch_legacy", "pytorch-legacy", "legacy torch.save", kTorchSaveFiles, Magic::kPickle,
     /*single_file_pipeline=*/true},
    {FileFormat::kNemo, "nemo", "nemo", "NeMo archives", kNemoFiles, Magic::kTar},
    {FileFormat::kTorchTar, "torch_tar", "pytorch-tar", "torch.save's pre-0.4 tar", kTorchTarFiles, Magic::kTar},
    {FileFormat::kNpy, "npy", "numpy", "NumPy arrays", kNpyFiles, Magic::kNpy},
    {FileFormat::kDcp, "dcp", "dcp", "torch.distributed.checkpoint folders", kDcpFiles, Magic::kName},
    {FileFormat::kOnnx, "onnx", "onnx", "ONNX", kOnnxFiles, Magic::kName},
    {FileFormat::kCompressed, "compressed", "compressed", "files compressed whole, judged for safety", kCompressedFiles,
     Magic::kCompressed},
    {FileFormat::kPickle, "pickle", "pickle", "bare pickles, judged for safety", kPickleFiles, Magic::kPickle},
    {FileFormat::kUnknown, "unknown", "", "", {}, Magic::kName},  // nothing read: a report has no format
}};

constexpr bool file_formats_in_enum_order() {
  for (size_t i = 0; i < kFileFormats.size(); ++i)
    if (static_cast<size_t>(kFileFormats[i].id) != i) return false;
  return kFileFormats.back().id == FileFormat::kUnknown;
}
static_assert(file_formats_in_enum_order(), "format_info() indexes kFileFormats by the enum's value");

constexpr std::array<NamedValue<Magic>, 10> kMagics = {{
    {Magic::kSafetensors, "safetensors"},
    {Magic::kGguf, "GGUF"},
    {Magic::kMsgpack, "msgpack"},
    {Magic::kHdf5, "HDF5"},
    {Magic::kZip, "zip"},
    {Magic::kPickle, "pickle"},
    {Magic::kTar, "tar"},
    {Magic::kNpy, "npy"},
    {Magic::kCompressed, "compressed"},
    {Magic::kName, ""},
}};
static_assert(listed_in_enum_order(kMagics) && kMagics.size() == static_cast<size_t>(Magic::kName) + 1);

constexpr FileFormat kSafetensorsFormats[] = {FileFormat::kSafetensors};
constexpr FileFormat kPytorchFormats[] = {FileFormat::kTorchZip, FileFormat::kTorchScript, FileFormat::kTorchLegacy,
                                          FileFormat::kTorchTar, FileFormat::kNemo};
constexpr FileFormat kFlaxFormats[] = {FileFormat::kFlax};
constexpr FileFormat kKerasFormats[] = {FileFormat::kKeras};
constexpr FileFormat kTfFormats[] = {FileFormat::kHdf5};
constexpr FileFormat kGgufFormats[] = {FileFormat::kGguf};
constexpr FileFormat kNumpyFormats[] = {FileFormat::kNpz, FileFormat::kNpy};
constexpr FileFormat kDcpFormats[] = {FileFormat::kDcp};
constexpr FileFormat kOnnxFormats[] = {FileFormat::kOnnx};

constexpr std::string_view kPytorchFiles[] = {".bin", ".pt", ".pth", ".ckpt", ".jit", ".nemo"};
constexpr std::string_view kNumpyFiles[] = {".npz", ".npy"};

constexpr std::array<WeightFormat, 9> kWeightFormats = {{
    {"safetensors", "model.safetensors.index.json", kSafetensorsFormats, kSafetensorsFiles},
    {"pytorch", "pytorch_model.bin.index.json", kPytorchFormats, kPytorchFiles},
    {"flax", "flax_model.msgpack.index.json", kFlaxFormats, kFlaxFiles},
    // Keras 3's own format: its model.weights.h5 is the weights any .h5 beside holds
    {"keras", "", kKerasFormats, kKerasFiles, /*read_remotely=*/false},
    {"tf", "tf_model.h5.index.json", kTfFormats, kHdf5Files, /*read_remotely=*/false},
    {"gguf", "", kGgufFormats, kGgufFiles},
    {"numpy", "", kNumpyFormats, kNumpyFiles},
    {"dcp", kDcpMetadata, kDcpFormats, kDcpFiles, /*read_remotely=*/false},
    {"onnx", "", kOnnxFormats, kOnnxFiles},  // an export: its external data files (model.onnx_data) are read through it
}};

/// A weight format's extensions are its file formats', in order, each once: what discovery looks for is what the
/// formats read.
constexpr bool extensions_are_its_formats(const WeightFormat& weights) {
  std::array<std::string_view, 16> expected{};
  size_t count = 0;
  for (FileFormat format : weights.formats)
    for (std::string_view extension : kFileFormats[static_cast<size_t>(format)].extensions)
      if (std::find(expected.begin(), expected.begin() + count, extension) == expected.begin() + count)
        expected[count++] = extension;
  return std::equal(expected.begin(), expected.begin() + count, weights.extensions.begin(), weights.extensions.end());
}

/// Every file format but a bare pickle, a compressed file and kUnknown counts in exactly one weight format.
constexpr bool each_format_in_one_weight_format() {
  for (const FileFormatInfo& format : kFileFormats) {
    size_t found = 0;
    for (const WeightFormat& weights : kWeightFormats)
      found += static_cast<size_t>(std::count(weights.formats.begin(), weights.formats.end(), format.id));
    bool none =
        format.id == FileFormat::kPickle || format.id == FileFormat::kCompressed || format.id == FileFormat::kUnknown;
    if (found != (none ? 0 : 1)) return false;
  }
  return true;
}

constexpr bool weight_formats_checked() {
  for (const WeightFormat& weights : kWeightFormats)
    if (!extensions_are_its_formats(weights)) return false;
  return each_format_in_one_weight_format();
}
static_assert(weight_formats_checked(), "each weight format's extensions and file formats agree with kFileFormats");

}  // namespace

std::span<const FileFormatInfo> file_formats() { return kFileFormats; }

const FileFormatInfo& format_info(FileFormat format) { return kFileFormats[static_cast<size_t>(format)]; }

std::string_view file_format_name(FileFormat format) { return format_info(format).name; }

std::span<const WeightFormat> weight_formats() { return kWeightFormats; }

bool may_hold_a_pipeline(std::string_view extension) {
  return std::ranges::any_of(kFileFormats, [&](const FileFormatInfo& format) {
    return format.single_file_pipeline && std::ranges::find(format.extensions, extension) != format.extensions.end();
  });
}

std::string format_list() {
  std::vector<std::string> items;
  auto item = [&](std::span<const FileFormat> formats, std::span<const std::string_view> extensions) {
    std::vector<std::string_view> titles;
    for (FileFormat format : formats) titles.push_back(format_info(format).title);
    items.push_back(fmt::format("{} ({})", fmt::join(titles, ", "), fmt::join(extensions, " ")));
  };
  for (const WeightFormat& weights : kWeightFormats) item(weights.formats, weights.extensions);
  constexpr FileFormat kPickle[] = {FileFormat::kPickle};
  item(kPickle, format_info(FileFormat::kPickle).extensions);
  return fmt::format("{}", fmt::join(items, "; "));
}

std::string examined_headers() {
  std::vector<std::string_view> names;
  for (const NamedValue<Magic>& magic : kMagics)
    for (const FileFormatInfo& format : kFileFormats)
      if (format.magic == magic.value && magic.value != Magic::kName) {
        names.push_back(magic.name);
        break;
      }
  std::string last(names.back());
  names.pop_back();
  return fmt::format("{} or {}", fmt::join(names, ", "), last);
}

}  // namespace precdetect
