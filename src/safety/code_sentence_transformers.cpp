// sentence-transformers' places, as 6.2.0 reads them and as the releases before 6.0 did. Sources per place:
// docs/security.md, "Code the loaders import".

#include <fmt/format.h>

#include "precdetect/safety/code_places.h"

namespace precdetect {
namespace {

/// A module class in the model's own files: 6.0 and later import it only with trust_remote_code=True
/// (util/misc.py:222, import_module_class); 5.x imported a local folder's without asking (a FutureWarning from 5.6,
/// huggingface/sentence-transformers#3801, fixed by #3935).
constexpr std::string_view kLocalCode =
    "sentence-transformers before 6.0 imports it from a local folder without trust_remote_code "
    "(huggingface/sentence-transformers#3801); 6.0 and later refuse without it";

/// A name a module class or activation comes from, judged as a pickle's global: sentence-transformers' own
/// namespace and torch.nn's module classes (the only ones it builds without trust_remote_code: dense.py:134,
/// cross_encoder/model.py:349) are allowed.
GlobalJudgement judge_module_name(const std::string& module, const std::string& name) {
  if (module == "sentence_transformers" || module.starts_with("sentence_transformers.") || module == "torch.nn" ||
      module.starts_with("torch.nn."))
    return {GlobalClass::kAllowed, DangerFamily::kNone, ""};
  return judge_global(module, name);
}

/// A module type (modules.json's `type`, a Router's `types`): the repository's own file when the model holds it
/// (import_module_class tries get_class_from_dynamic_module first), else a module of the installed packages.
void module_type(CodeSearch& search, const std::string& config_name, const std::string& key, const std::string& type) {
  if (type.starts_with("sentence_transformers.")) return;
  std::optional<ClassReference> reference = parse_class_reference(type);
  if (!reference) return;
  if (reference->repository.empty() && search.has(reference->file(""))) {
    search.code({.file = reference->file(""),
                 .classes = {reference->qualified()},
                 .named_by = fmt::format("{} {}", config_name, key),
                 .repository = "",
                 .consent = CodeConsent::kNotAsked,
                 .why = std::string(kLocalCode)});
    return;
  }
  search.module(reference->module, reference->name, config_name, judge_module_name(reference->module, reference->name));
}

/// A dotted name a config gives for sentence-transformers to import and construct (an activation).
void activation(CodeSearch& search, const std::string& config_name, const nlohmann::json& value) {
  if (!value.is_string()) return;
  std::optional<ClassReference> reference = parse_class_reference(value.get<std::string>());
  if (reference && reference->repository.empty())
    search.module(reference->module, reference->name, config_name,
                  judge_module_name(reference->module, reference->name));
}

/// The module of class `type` at `path` (a modules.json entry's folder): a Dense's activation (dense.py:133), a
/// Router's types (base/modules/router.py:672).
void module_folder(CodeSearch& search, const std::string& type, const std::string& path) {
  std::string folder = path.empty() || path.ends_with('/') ? path : path + "/";
  if (type.ends_with(".Dense"))
    if (const nlohmann::json* dense = search.config(folder + "config.json"))
      if (auto found = dense->find("activation_function"); found != dense->end())
        activation(search, folder + "config.json", *found);
  if (!type.ends_with(".Router")) return;
  for (const std::string& name : {folder + "router_config.json", folder + "config.json"}) {
    const nlohmann::json* router = search.config(name);
    auto types = router ? router->find("types") : nlohmann::json::const_iterator();
    if (!router || types == router->end() || !types->is_object()) continue;
    for (const auto& [id, type] : types->items())
      if (type.is_string()) module_type(search, name, "types." + id, type.get<std::string>());
  }
}

}  // namespace

void find_sentence_transformers_code(CodeSearch& search) {
  // modules.json is a list: read as text, not as an object config.
  if (std::optional<std::string> text = search.has("modules.json") ? search.text("modules.json") : std::nullopt) {
    nlohmann::json modules = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (modules.is_array())
      for (size_t i = 0; i < modules.size(); ++i) {
        const nlohmann::json& entry = modules[i];
        if (!entry.is_object()) continue;
        auto type = entry.find("type");
        if (type == entry.end() || !type->is_string()) continue;
        module_type(search, "modules.json", fmt::format("[{}].type", i), type->get<std::string>());
        if (auto path = entry.find("path"); path != entry.end() && path->is_string())
          module_folder(search, type->get<std::string>(), path->get<std::string>());
      }
  }
  // A CrossEncoder's activation (cross_encoder/model.py:361, and before 4.0 `sbert_ce_default_activation_function`).
  if (const nlohmann::json* config = search.config("config.json")) {
    if (auto st = config->find("sentence_transformers"); st != config->end() && st->is_object())
      if (auto found = st->find("activation_fn"); found != st->end()) activation(search, "config.json", *found);
    if (auto found = config->find("sbert_ce_default_activation_function"); found != config->end())
      activation(search, "config.json", *found);
  }
}

}  // namespace precdetect
