// PEFT's places in adapter_config.json, as PEFT 0.21.2 reads them and as the releases before 0.20 did. Sources:
// docs/security.md, "Code the loaders import".

#include <fmt/format.h>

#include <array>

#include "precdetect/safety/code_places.h"

namespace precdetect {
namespace {

/// auto.py:55, get_default_import_allowlist: the packages AutoPeftModel imports `auto_mapping.parent_library` from
/// since 0.20 (huggingface/peft#3090), by name or prefix; any other needs the user's `import_allowlist`. Before
/// 0.20 it imported any module the adapter named.
constexpr std::array<std::string_view, 4> kParentLibraries = {"diffusers", "lerobot", "megatron-core", "transformers"};

bool allowed_prefix(std::string_view module, std::string_view allowed) {
  return module == allowed ||
         (module.starts_with(allowed) && module.size() > allowed.size() && module[allowed.size()] == '.');
}

/// `module` split at its last '.' ("megatron.core" -> "megatron", "core"), or the whole name twice when it has none.
std::pair<std::string, std::string> module_and_name(const std::string& module) {
  size_t dot = module.rfind('.');
  return dot == std::string::npos ? std::pair{module, module}
                                  : std::pair{module.substr(0, dot), module.substr(dot + 1)};
}

void adapter(CodeSearch& search, const std::string& config_name) {
  const nlohmann::json* config = search.config(config_name);
  if (!config) return;
  if (auto mapping = config->find("auto_mapping"); mapping != config->end() && mapping->is_object()) {
    std::string library = mapping->value("parent_library", "");
    std::string base_class = mapping->value("base_model_class", "");
    bool allowed = std::any_of(kParentLibraries.begin(), kParentLibraries.end(),
                               [&](std::string_view prefix) { return allowed_prefix(library, prefix); });
    if (!library.empty() && !base_class.empty() && !allowed)
      search.module(library, base_class, config_name, judge_global(library, base_class));
  }
  // tuners/lora/tp_layer.py:327: with `megatron_config` set, LoRA imports `megatron_core` while transformers'
  // from_pretrained loads the adapter, asking nothing; 0.20 and later only a module under `megatron.`, before any.
  auto megatron = config->find("megatron_core");
  auto megatron_config = config->find("megatron_config");
  if (megatron == config->end() || !megatron->is_string() || megatron_config == config->end() ||
      megatron_config->is_null() || megatron->get<std::string>().starts_with("megatron."))
    return;
  auto [module, name] = module_and_name(megatron->get<std::string>());
  search.module(module, name, config_name, judge_global(module, name));
}

}  // namespace

void find_peft_code(CodeSearch& search) {
  for (const std::string& config_name : search.at_any_level("adapter_config.json")) adapter(search, config_name);
}

}  // namespace precdetect
