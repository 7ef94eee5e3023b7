#include "precdetect/safety/custom_code.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "precdetect/net/text_file.h"

namespace precdetect {
namespace {

/// "modeling_x.XModel" -> ("modeling_x.py", "modeling_x.XModel"); "org/repo--modeling_x.XModel" -> the file in
/// that repository, "org/repo: modeling_x.py". Empty for what names no class in a module.
std::pair<std::string, std::string> file_and_class(std::string reference) {
  std::string repository;
  if (size_t split = reference.find("--"); split != std::string::npos) {
    repository = reference.substr(0, split);
    reference = reference.substr(split + 2);
  }
  size_t dot = reference.rfind('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == reference.size()) return {};
  std::string module = reference.substr(0, dot);
  std::replace(module.begin(), module.end(), '.', '/');
  std::string file = module + ".py";
  return {repository.empty() ? file : fmt::format("{}: {}", repository, file), reference};
}

/// Every string in `node` (a string, or a list of them: a tokenizer's [slow, fast] pair, nulls aside).
std::vector<std::string> references_in(const nlohmann::json& node) {
  std::vector<std::string> found;
  if (node.is_string()) found.push_back(node.get<std::string>());
  if (node.is_array())
    for (const auto& item : node)
      if (item.is_string()) found.push_back(item.get<std::string>());
  return found;
}

/// The class references of `auto_map` and of each `custom_pipelines` task's `impl`.
std::vector<std::string> class_references(const nlohmann::json& config) {
  std::vector<std::string> found;
  if (auto map = config.find("auto_map"); map != config.end() && map->is_object())
    for (const auto& [auto_class, value] : map->items())
      for (std::string& reference : references_in(value)) found.push_back(std::move(reference));
  if (auto pipelines = config.find("custom_pipelines"); pipelines != config.end() && pipelines->is_object())
    for (const auto& [task, pipeline] : pipelines->items())
      if (pipeline.is_object() && pipeline.contains("impl"))
        for (std::string& reference : references_in(pipeline["impl"])) found.push_back(std::move(reference));
  return found;
}

}  // namespace

std::vector<CustomCode> custom_code_named(std::string_view config, std::string_view file_name) {
  nlohmann::json parsed = nlohmann::json::parse(config, nullptr, false);
  if (!parsed.is_object()) return {};
  std::map<std::string, std::vector<std::string>> by_file;
  for (const std::string& reference : class_references(parsed)) {
    auto [file, class_name] = file_and_class(reference);
    std::vector<std::string>& classes = by_file[file.empty() ? reference : file];
    if (std::find(classes.begin(), classes.end(), class_name) == classes.end() && !class_name.empty())
      classes.push_back(class_name);
  }
  std::vector<CustomCode> named;
  named.reserve(by_file.size());
  for (auto& [file, classes] : by_file)
    named.push_back({.file = file, .classes = std::move(classes), .named_by = fmt::format("{} auto_map", file_name)});
  return named;
}

void examine_custom_code(const std::vector<std::filesystem::path>& texts, Safety& safety) {
  std::vector<CustomCode> found;
  for (const std::filesystem::path& text : texts) {
    std::string name = text.filename().string();
    if (name != "config.json" && name != "tokenizer_config.json") continue;
    try {
      for (CustomCode& code : custom_code_named(read_text_file(text, name), name)) found.push_back(std::move(code));
    } catch (const std::exception& e) {  // unreadable, or a link out of the model: never passed
      safety.add_failure(e, text.string());
    }
  }
  for (const std::filesystem::path& text : texts) {
    if (text.extension() != ".py") continue;
    std::string file = text.filename().string();
    if (std::none_of(found.begin(), found.end(), [&](const CustomCode& code) { return code.file == file; }))
      found.push_back({.file = file});
  }
  safety.custom_code.insert(safety.custom_code.end(), found.begin(), found.end());
}

}  // namespace precdetect
