#include "precdetect/safety/keras_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <vector>

namespace precdetect {
namespace {

using Json = nlohmann::ordered_json;  // the config's own order: the first function found is the first written

/// The packages whose modules Keras resolves names in itself. Keras 3 imports no other module since 3.9 (before,
/// any: CVE-2025-1550) and, since 3.11, from these only KerasSaveable classes and its public API less the list below
/// (keras/src/saving/serialization_lib.py, `_retrieve_class_or_fn`); tf-keras reads `keras.*` as `tf_keras.*`.
constexpr std::string_view kKerasPackages[] = {"keras", "keras_hub", "keras_cv", "keras_nlp", "tf_keras"};

/// Keras' own NON_MODELING_APIS (serialization_lib.py, Keras 3.15; LOADING_APIS from 3.11): public functions it
/// refuses to resolve from a config because a model has no use for them and an attacker does. Keras 3.9 and 3.10
/// and tf-keras resolve them, from any module of the package (CVE-2025-8747: get_file; CVE-2025-9906:
/// enable_unsafe_deserialization, then a Lambda), so they are matched by name.
struct NonModeling {
  std::string_view name;
  DangerFamily family;
};
constexpr NonModeling kNonModeling[] = {
    {"enable_unsafe_deserialization", DangerFamily::kCodeExecution},  // turns safe_mode off for what follows
    {"get_file", DangerFamily::kNetwork},
    {"load_model", DangerFamily::kNestedDeserialization},
    {"model_from_json", DangerFamily::kNestedDeserialization},
    {"load_weights", DangerFamily::kNestedDeserialization},
    {"deserialize_keras_object", DangerFamily::kNestedDeserialization},
    {"serialize_keras_object", DangerFamily::kNestedDeserialization},
    {"register_keras_serializable", DangerFamily::kImportMachinery},  // rebinds what a name resolves to
    {"save_model", DangerFamily::kFilesystem},
    {"save_weights", DangerFamily::kFilesystem},
    {"load_img", DangerFamily::kFilesystem},
    {"save_img", DangerFamily::kFilesystem},
    {"image_dataset_from_directory", DangerFamily::kFilesystem},
    {"text_dataset_from_directory", DangerFamily::kFilesystem},
    {"audio_dataset_from_directory", DangerFamily::kFilesystem},
    {"clear_session", DangerFamily::kProcess},
};

/// Class names Keras' deserializer builds itself, importing nothing (its "special cases"); `__lambda__` is judged
/// before these.
constexpr std::string_view kSpecialClasses[] = {"__keras_tensor__", "__tensor__",   "__numpy__",
                                                "__bytes__",        "__ellipsis__", "__slice__"};

/// Python builtins a Lambda could call that end or take over the process (`site` adds them): not on the pickle
/// lists, which call every builtin that is no plain data type dangerous.
constexpr std::string_view kProcessBuiltins[] = {"exit", "quit", "help"};

bool contains(std::span<const std::string_view> list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

bool keras_package(std::string_view module) { return contains(kKerasPackages, module.substr(0, module.find('.'))); }

/// A `builtins` name in a Keras config: Keras' name for its own built-in functions (`keras.ops.abs` is written
/// `builtins` `abs`). Every Keras looks the name up among its activations, losses, ... first; only Keras before 3.9
/// and tf-keras fall back on Python's builtins, where the listed ones (eval, open, getattr, ...) and those that end
/// or take over the process are dangerous, and the rest only compute (abs, max, sum).
GlobalJudgement judge_keras_builtin(std::string_view module, std::string_view name) {
  GlobalJudgement judgement = judge_listed_global(module, name);
  if (judgement.kind == GlobalClass::kDangerous) return judgement;
  if (contains(kProcessBuiltins, name))
    return {GlobalClass::kDangerous, DangerFamily::kProcess,
            fmt::format("builtins.{} (ends or takes over the process)", name)};
  return {GlobalClass::kAllowed, DangerFamily::kNone, ""};
}

// ---- marshalled code, as func_load decodes it

/// A marshalled code object's first bytes: its type ('c', with or without marshal's FLAG_REF) and three counts
/// (argcount, posonlyargcount, kwonlyargcount from Python 3.8; argcount, kwonlyargcount, nlocals before), small.
constexpr size_t kCodeHead = 13;
bool code_head(const std::array<uint8_t, kCodeHead>& head) {
  if (head[0] != 'c' && head[0] != ('c' | 0x80)) return false;
  for (size_t count = 1; count < kCodeHead; count += 4)
    if (head[count + 1] != 0 || head[count + 2] != 0 || head[count + 3] != 0) return false;
  return true;
}

/// The first bytes of `text` base64-decoded as binascii.a2b_base64 does (characters outside the alphabet skipped,
/// as the newlines codecs writes every 76), or nullopt when it holds fewer.
std::optional<std::array<uint8_t, kCodeHead>> base64_head(std::string_view text) {
  std::array<uint8_t, kCodeHead> head{};
  uint32_t bits = 0;
  int pending = 0;
  size_t filled = 0;
  for (char c : text) {
    if (c == '=') break;
    std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t value = alphabet.find(c);
    if (value == std::string_view::npos) continue;
    bits = (bits << 6) | static_cast<uint32_t>(value), pending += 6;
    if (pending < 8) continue;
    pending -= 8;
    head[filled++] = static_cast<uint8_t>(bits >> pending);
    if (filled == kCodeHead) return head;
  }
  return std::nullopt;
}

/// The first bytes of `text` as raw_unicode_escape encodes it, func_load's fallback for text that is not base64:
/// each code point below 256 one byte (`text` is UTF-8); nullopt for fewer, or for a larger code point.
std::optional<std::array<uint8_t, kCodeHead>> raw_head(std::string_view text) {
  std::array<uint8_t, kCodeHead> head{};
  size_t at = 0;
  for (uint8_t& byte : head) {
    if (at >= text.size()) return std::nullopt;
    auto lead = static_cast<uint8_t>(text[at]);
    if (lead < 0x80) {
      byte = lead, at += 1;
    } else if ((lead & 0xfe) == 0xc2 && at + 1 < text.size()) {  // U+0080..U+00FF
      byte = static_cast<uint8_t>(((lead & 0x03) << 6) | (static_cast<uint8_t>(text[at + 1]) & 0x3f)), at += 2;
    } else {
      return std::nullopt;
    }
  }
  return head;
}

/// True when func_load would read `text` as a marshalled code object (either of its decodings).
bool marshalled_code(std::string_view text) {
  auto base64 = base64_head(text);
  auto raw = raw_head(text);
  return (base64 && code_head(*base64)) || (raw && code_head(*raw));
}

// ---- the walk

std::string string_at(const Json& node, const char* key) {
  auto found = node.find(key);
  return found != node.end() && found->is_string() ? found->get<std::string>() : std::string();
}

/// Paths stop growing past this: a config's depth is the file's choice, and a report needs the way in, not all of it.
constexpr size_t kMaxPath = 160;

/// A node of the config, where it is.
struct Place {
  const Json* node;
  const Json* layer;  ///< the nearest object above it with a class and a named config (a layer), or nullptr
  std::string path;   ///< "config.layers[2].config.function", "" for the root
};

std::string child_path(const std::string& parent, const std::string& part, bool key) {
  if (parent.size() > kMaxPath) return parent.ends_with("...") ? parent : parent + "...";
  return parent.empty() || !key ? parent + part : fmt::format("{}.{}", parent, part);
}

/// "`double` (Lambda)": the layer a place belongs to, by its config's name and its class.
std::string layer_text(const Json& layer) {
  return fmt::format("`{}` ({})", string_at(layer.at("config"), "name"), string_at(layer, "class_name"));
}

/// The walk of one config, iterative (its depth is the file's choice), each object judged once.
class ConfigJudge {
 public:
  ConfigJudge(const std::string& where, Safety& safety) : where_(where), safety_(safety) {}

  void judge(const Json& root) {
    std::vector<Place> stack{{&root, nullptr, ""}};
    while (!stack.empty()) {
      Place place = std::move(stack.back());
      stack.pop_back();
      if (place.node->is_string() && marshalled_code(place.node->get_ref<const std::string&>())) {
        function(place, "marshalled Python code");
      } else if (!place.node->is_object() || !object(place)) {
        push_children(place, stack);
      }
    }
  }

 private:
  /// An object: a serialized function (true: nothing below it is judged), else any name it asks Keras for.
  bool object(const Place& place) {
    const Json& node = *place.node;
    std::string class_name = string_at(node, "class_name");
    if (class_name == "__lambda__") return function(place, "a Python lambda (`__lambda__`)"), true;
    for (const auto& [key, value] : node.items())
      if (key.size() > 5 && key.ends_with("_type") && value == "lambda")
        return function(place, fmt::format("a Python lambda (`{}: \"lambda\"`)", key)), true;
    auto module = node.find("module");
    if (!class_name.empty() && module != node.end() && module->is_string())
      import(module->get<std::string>(), class_name, node);
    return false;
  }

  /// The class or function an object names in `module`, judged (Keras' `_retrieve_class_or_fn`).
  void import(const std::string& module, const std::string& class_name, const Json& node) {
    if (contains(kSpecialClasses, class_name)) return;
    std::string name = class_name == "function"       ? string_at(node, "config")
                       : class_name == "__typespec__" ? string_at(node, "spec_name")
                                                      : class_name;
    if (module.empty() || name.empty()) return;
    GlobalJudgement judgement = judge_keras_name(module, name);
    if (judgement.kind == GlobalClass::kAllowed || !imported_.insert(module + "\n" + name).second) return;
    safety_.imports.push_back({.module = module,
                               .name = name,
                               .judgement = std::move(judgement),
                               .spelling = "",
                               .file = where_,
                               .offset = 0,  // a name in JSON text: the report's offset is the member's, no opcode's
                               .called = true});
  }

  /// A serialized function, `what`, at `place`: loading the model runs it.
  void function(const Place& place, std::string_view what) {
    std::string at = place.path.empty() ? "the config's root" : place.path;
    std::string detail = place.layer ? fmt::format("{} in {}, at {}", what, layer_text(*place.layer), at)
                                     : fmt::format("{} at {}", what, at);
    safety_.tampering.push_back({.kind = FileTampering::kSerializedFunction, .detail = detail, .file = where_});
  }

  /// Pushes the children of `place` in reverse, so that they are judged in the config's order.
  static void push_children(const Place& place, std::vector<Place>& stack) {
    const Json& node = *place.node;
    size_t first = stack.size();
    if (node.is_array()) {
      for (size_t i = 0; i < node.size(); ++i)
        stack.push_back({&node[i], place.layer, child_path(place.path, fmt::format("[{}]", i), false)});
    } else if (node.is_object()) {
      auto config = node.find("config");
      bool layer =
          node.contains("class_name") && config != node.end() && config->is_object() && config->contains("name");
      for (const auto& [key, value] : node.items())
        stack.push_back({&value, layer ? &node : place.layer, child_path(place.path, key, true)});
    }
    std::reverse(stack.begin() + static_cast<std::ptrdiff_t>(first), stack.end());
  }

  const std::string& where_;
  Safety& safety_;
  std::set<std::string> imported_;  ///< module and name, once per config
};

}  // namespace

GlobalJudgement judge_keras_name(std::string_view module, std::string_view name) {
  if (module == "builtins" || module == "__builtin__" || module == "__builtins__")
    return judge_keras_builtin(module, name);
  GlobalJudgement judgement = judge_global(module, name);
  if (judgement.kind == GlobalClass::kDangerous || !keras_package(module)) return judgement;
  std::string_view function = name.substr(name.rfind('.') + 1);
  for (const NonModeling& entry : kNonModeling)
    if (function == entry.name)
      return {GlobalClass::kDangerous, entry.family,
              fmt::format("{} (on Keras' own NON_MODELING_APIS, which Keras 3.11 and later refuse)", entry.name)};
  return {GlobalClass::kAllowed, DangerFamily::kNone, ""};
}

void judge_keras_config(std::string_view json, const std::string& where, Safety& safety) {
  Json config = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded())
    return safety.unverified.push_back(fmt::format(
        "{}: a Keras model config that is not JSON (keras.models.load_model cannot load it either)", where));
  ConfigJudge(where, safety).judge(config);
}

}  // namespace precdetect
