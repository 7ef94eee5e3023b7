#include "precdetect/load/components.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "precdetect/core/bytes.h"
#include "precdetect/core/error.h"
#include "precdetect/core/open_file.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/net/url.h"

namespace precdetect {
namespace {

struct ComponentPrefix {
  std::string_view prefix, component;
};

constexpr std::array<ComponentPrefix, 9> kPrefixes = {{
    {"model.diffusion_model.", "diffusion_model"},
    {"first_stage_model.", "vae"},
    {"vae.", "vae"},
    {"cond_stage_model.", "text_encoder"},
    {"conditioner.embedders.0.", "text_encoder"},
    {"conditioner.embedders.1.", "text_encoder_2"},
    {"text_encoders.clip_l.", "clip_l"},
    {"text_encoders.clip_g.", "clip_g"},
    {"text_encoders.t5xxl.", "t5xxl"},
}};

constexpr std::string_view kOther = "other";
constexpr uint64_t kMaxHeader = uint64_t{100} << 20;  // safetensors' own limit on a header

bool is_component(std::string_view name) {
  return name == kOther ||
         std::any_of(kPrefixes.begin(), kPrefixes.end(), [&](const ComponentPrefix& p) { return p.component == name; });
}

/// A safetensors header's JSON: from a local file with pread (nothing is mapped), from a remote one by range (its
/// first read holds a header of up to 64 KiB).
std::string safetensors_header(const std::filesystem::path& file) {
  auto fail_unless = [&](bool ok) {
    if (!ok) fail(ErrorCode::kInvalidHeader, file, "not a safetensors header");
  };
  uint64_t length = 0;
  if (is_url(file.native())) {
    std::unique_ptr<ByteSource> source = map_file(file);
    fail_unless(source->size() >= sizeof length);
    length = read_le<uint64_t>(source->view(0, sizeof length), 0);
    fail_unless(length <= kMaxHeader && length + sizeof length <= source->size());
    auto header = source->view(sizeof length, length);
    return {reinterpret_cast<const char*>(header.data()), header.size()};
  }
  OpenFile open = open_for_reading(file, "weights file");
  fail_unless(::pread(open.fd(), &length, sizeof length, 0) == sizeof length && length <= kMaxHeader &&
              length + sizeof length <= open.size());
  std::string header(length, '\0');
  if (::pread(open.fd(), header.data(), length, sizeof length) != static_cast<ssize_t>(length))
    fail(ErrorCode::kIo, file, "the header could not be read");
  return header;
}

/// The tensor names of a safetensors header.
std::vector<TensorRecord> safetensors_names(const std::filesystem::path& file) {
  nlohmann::json document = nlohmann::json::parse(safetensors_header(file), nullptr, /*allow_exceptions=*/false);
  if (!document.is_object()) fail(ErrorCode::kInvalidJson, file, "the header is not a JSON object");
  std::vector<TensorRecord> names;
  for (const auto& [name, entry] : document.items())
    if (name != "__metadata__") names.push_back({.name = name});
  return names;
}

}  // namespace

std::vector<std::string> file_components(const std::filesystem::path& file) {
  if (file.extension() == ".safetensors") return single_file_components(safetensors_names(file));
  return single_file_components(open_checkpoint({.path = file, .files = {file}}, ReadMode::kPread).tensors);
}

std::string_view component_of(std::string_view tensor) {
  for (const ComponentPrefix& entry : kPrefixes)
    if (tensor.starts_with(entry.prefix)) return entry.component;
  return kOther;
}

std::vector<std::string> single_file_components(std::span<const TensorRecord> tensors) {
  std::vector<std::string_view> found;
  for (const TensorRecord& tensor : tensors)
    if (std::string_view component = component_of(tensor.name);
        std::find(found.begin(), found.end(), component) == found.end())
      found.push_back(component);
  std::vector<std::string> components;  // in kPrefixes' order, "other" last: the same order whatever the file's
  for (const ComponentPrefix& entry : kPrefixes)
    if (std::find(found.begin(), found.end(), entry.component) != found.end() &&
        std::find(components.begin(), components.end(), entry.component) == components.end())
      components.emplace_back(entry.component);
  if (components.size() < 2) return {};
  if (std::find(found.begin(), found.end(), kOther) != found.end()) components.emplace_back(kOther);
  return components;
}

std::optional<ComponentInput> component_input(std::string_view input) {
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::path(input), ec)) return std::nullopt;
  size_t hash = input.rfind('#');
  if (hash == std::string_view::npos || hash == 0 || !is_component(input.substr(hash + 1))) return std::nullopt;
  return ComponentInput{std::string(input.substr(0, hash)), std::string(input.substr(hash + 1))};
}

void keep_component(std::vector<TensorRecord>& tensors, std::string_view component, const std::string& file) {
  std::erase_if(tensors, [&](const TensorRecord& tensor) { return component_of(tensor.name) != component; });
  if (tensors.empty())
    fail(ErrorCode::kMissingTensor, file, fmt::format("holds no tensor of the component `{}`", component));
}

}  // namespace precdetect
