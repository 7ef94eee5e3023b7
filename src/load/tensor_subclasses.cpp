#include "precdetect/load/tensor_subclasses.h"

namespace precdetect {

namespace {
constexpr const char* kConfigKey = "tensor_subclasses";
}  // namespace

std::string subclass_part_name(const std::string& tensor, std::string_view attribute) {
  const size_t dot = tensor.rfind('.');
  if (dot == std::string::npos) return "_" + tensor + "_" + std::string(attribute);
  return tensor.substr(0, dot) + "._" + tensor.substr(dot + 1) + "_" + std::string(attribute);
}

void add_safetensors_subclasses(std::map<std::string, std::string>& subclasses,
                                const std::map<std::string, std::string>& metadata) {
  auto listed = metadata.find("tensor_names");
  if (listed == metadata.end()) return;
  const nlohmann::json names = nlohmann::json::parse(listed->second, nullptr, false);
  if (!names.is_array()) return;
  for (const nlohmann::json& name : names) {
    if (!name.is_string()) continue;
    auto description = metadata.find(name.get<std::string>());
    if (description == metadata.end()) continue;
    const nlohmann::json parsed = nlohmann::json::parse(description->second, nullptr, false);
    bool plain = parsed.is_object() && parsed.contains("_type") && parsed["_type"] == "Tensor";
    if (!plain) subclasses.emplace(description->first, description->second);
  }
}

nlohmann::json with_tensor_subclasses(nlohmann::json config, const std::map<std::string, std::string>& subclasses) {
  if (subclasses.empty()) return config;
  if (!config.is_object()) config = nlohmann::json::object();
  nlohmann::json& described = config[kConfigKey] = nlohmann::json::object();
  for (const auto& [name, text] : subclasses) {
    nlohmann::json description = nlohmann::json::parse(text, nullptr, false);
    if (!description.is_discarded()) described[name] = std::move(description);
  }
  return config;
}

const nlohmann::json* tensor_subclasses_of(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains(kConfigKey) || !config[kConfigKey].is_object()) return nullptr;
  return &config[kConfigKey];
}

}  // namespace precdetect
