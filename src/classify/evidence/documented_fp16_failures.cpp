#include "precdetect/classify/evidence/documented_fp16_failures.h"

#include <fmt/format.h>

#include <algorithm>

#include "precdetect/core/error.h"

namespace precdetect {
namespace {

using nlohmann::json;

std::vector<std::string> strings(const json& entry, const char* key, const std::string& origin, size_t index) {
  std::vector<std::string> list;
  if (!entry.contains(key)) return list;
  if (!entry[key].is_array())
    fail(ErrorCode::kInvalidRegistry, origin, fmt::format("entry {}: `{}` must be a list", index, key));
  for (const json& item : entry[key]) {
    if (!item.is_string() || item.get<std::string>().empty())
      fail(ErrorCode::kInvalidRegistry, origin, fmt::format("entry {}: `{}` holds a non-string", index, key));
    list.push_back(item.get<std::string>());
  }
  return list;
}

std::string text(const json& entry, const char* key, const std::string& origin, size_t index) {
  if (!entry.contains(key) || !entry[key].is_string() || entry[key].get<std::string>().empty())
    fail(
        ErrorCode::kInvalidRegistry, origin,
        fmt::format("entry {}: `{}` must be a non-empty string (every entry cites and quotes its source)", index, key));
  return entry[key].get<std::string>();
}

Fp16Failure parse_entry(const json& entry, const std::string& origin, size_t index) {
  if (!entry.is_object()) fail(ErrorCode::kInvalidRegistry, origin, fmt::format("entry {}: not an object", index));
  Fp16Failure failure{.id = text(entry, "id", origin, index),
                      .model_types = strings(entry, "model_types", origin, index),
                      .architectures = strings(entry, "architectures", origin, index),
                      .ids = strings(entry, "ids", origin, index),
                      .keep_in_fp32 = strings(entry, "keep_in_fp32", origin, index),
                      .says = text(entry, "says", origin, index),
                      .source = text(entry, "source", origin, index),
                      .quote = text(entry, "quote", origin, index)};
  if (failure.model_types.empty() && failure.architectures.empty() && failure.ids.empty())
    fail(ErrorCode::kInvalidRegistry, origin,
         fmt::format("entry {} ({}): names no models (model_types, architectures or ids)", index, failure.id));
  if (entry.contains("config")) {
    if (!entry["config"].is_object())
      fail(ErrorCode::kInvalidRegistry, origin, fmt::format("entry {}: `config` must be an object", index));
    failure.config = entry["config"];
  }
  return failure;
}

bool contains(const std::vector<std::string>& list, const json& value) {
  return value.is_string() && std::find(list.begin(), list.end(), value.get<std::string>()) != list.end();
}

/// config.json's model_type, or its text_config's (a multimodal wrapper names its language model there).
bool model_type_matches(const Fp16Failure& failure, const json& config) {
  for (const json* scope : {&config, config.contains("text_config") ? &config["text_config"] : nullptr})
    if (scope != nullptr && scope->is_object() && scope->contains("model_type") &&
        contains(failure.model_types, (*scope)["model_type"]))
      return true;
  return false;
}

bool architecture_matches(const Fp16Failure& failure, const json& config) {
  if (!config.contains("architectures") || !config["architectures"].is_array()) return false;
  return std::any_of(config["architectures"].begin(), config["architectures"].end(),
                     [&](const json& name) { return contains(failure.architectures, name); });
}

bool id_matches(const Fp16Failure& failure, const ModelIdentity& identity) {
  for (const auto* id : {&identity.hub_id, &identity.name_or_path, &identity.legacy_name})
    if (*id && std::any_of(failure.ids.begin(), failure.ids.end(),
                           [&](const std::string& pattern) { return hub_id_match(pattern, **id) > 0; }))
      return true;
  return false;
}

bool matches(const Fp16Failure& failure, const ModelIdentity& identity) {
  const json& config = identity.config.is_object() ? identity.config : json::object();
  for (const auto& [key, value] : failure.config.items())
    if (!config.contains(key) || config[key] != value) return false;
  return model_type_matches(failure, config) || architecture_matches(failure, config) || id_matches(failure, identity);
}

}  // namespace

const std::vector<Fp16Failure>& documented_fp16_failures() {
  static const std::vector<Fp16Failure> failures = parse_fp16_failures(
#include "fp16_failures.inc"
      , "<built-in fp16 failures>");
  return failures;
}

std::vector<Fp16Failure> parse_fp16_failures(const std::string& text, const std::string& origin) {
  json document;
  try {
    document = json::parse(text);
  } catch (const json::parse_error& e) {
    fail(ErrorCode::kInvalidRegistry, origin, fmt::format("not JSON: {}", e.what()));
  }
  if (!document.is_array()) fail(ErrorCode::kInvalidRegistry, origin, "a list of fp16 failures is a JSON list");
  std::vector<Fp16Failure> failures;
  for (size_t i = 0; i < document.size(); ++i) failures.push_back(parse_entry(document[i], origin, i));
  return failures;
}

std::vector<const Fp16Failure*> find_fp16_failures(std::span<const Fp16Failure> failures,
                                                   const ModelIdentity& identity) {
  std::vector<const Fp16Failure*> found;
  for (const Fp16Failure& failure : failures)
    if (matches(failure, identity)) found.push_back(&failure);
  return found;
}

}  // namespace precdetect
