#pragma once
/// Each library's places where a model names code for it to import, one file per library (safety/code_*.cpp), all
/// behind one small object that reads the model's configs and records what they name. The places, what each
/// release of the library does with them and the sources: docs/security.md ("Code the loaders import").

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "precdetect/load/pickle/pickle_globals.h"
#include "precdetect/safety/custom_code.h"
#include "precdetect/safety/safety.h"

namespace precdetect {

/// A class reference as transformers' `get_class_from_dynamic_module` splits it: `"modeling_x.XModel"`, or
/// `"org/repo--modeling_x.XModel"` for code in another repository. sentence-transformers and diffusers' `auto_map`
/// resolve theirs the same way.
struct ClassReference {
  std::string repository;  ///< before "--", or "" for the model's own
  std::string module;      ///< "modeling_x" (a path from the folder that names it: "sub/modeling_x")
  std::string name;        ///< "XModel"
  /// "modeling_x.py" in `folder` ("" or "unet/"), or "org/repo: modeling_x.py" for another repository's.
  std::string file(std::string_view folder) const;
  std::string qualified() const { return module + "." + name; }  ///< "modeling_x.XModel"
};

/// `reference` split at "--" and its last '.'; nullopt when it names no class in a module ("x", ".X", "x.").
std::optional<ClassReference> parse_class_reference(std::string_view reference);

/// What one model's places are looked up in, and where their findings go.
class CodeSearch {
 public:
  CodeSearch(const std::vector<std::string>& listing, const ReadModelFile& read, Safety& safety);

  /// True when the model holds the file `name` (a path from its root).
  bool has(std::string_view name) const;
  /// Every listed file called `file_name` at the root or one folder down, root first: "config.json",
  /// "unet/config.json", ...
  std::vector<std::string> at_any_level(std::string_view file_name) const;
  /// The model's config `name` parsed, read once; nullptr when it is not listed, cannot be read (recorded with
  /// Safety::add_failure) or is no JSON object.
  const nlohmann::json* config(const std::string& name);
  /// The text of the model's file `name`, as `read` gives it, read once; nullopt when it cannot be read (recorded).
  std::optional<std::string> text(const std::string& name);

  /// Records code a loader imports; the same file named by the same config gathers its classes and keys in one
  /// finding ("config.json auto_map.AutoConfig, auto_map.AutoModel").
  void code(CustomCode found);
  /// Records a module a loader imports by name from the installed packages, judged as a pickle's global
  /// (judge_global, unless the loader's own rule allows it: `judgement`); an allowed one is not listed. `file` is
  /// the config that names it.
  void module(const std::string& module, const std::string& name, const std::string& file, GlobalJudgement judgement);

  Safety& safety() { return safety_; }

 private:
  const std::vector<std::string>& listing_;
  const ReadModelFile& read_;
  Safety& safety_;
  std::map<std::string, std::optional<std::string>> texts_;
  std::map<std::string, std::optional<nlohmann::json>> configs_;
};

/// `auto_map` in transformers' configs (config.json, tokenizer_config.json, processor_config.json,
/// preprocessor_config.json, video_preprocessor_config.json) and diffusers' (a component's config.json,
/// modular_config.json), at the root or in a component's folder; config.json's `custom_pipelines`; the
/// `custom_generate/generate.py` transformers' GenerationMixin loads (safety/code_transformers.cpp).
void find_transformers_code(CodeSearch& search);
/// modules.json's module types, a Dense module's `activation_function`, a CrossEncoder's activation
/// (safety/code_sentence_transformers.cpp).
void find_sentence_transformers_code(CodeSearch& search);
/// adapter_config.json's `auto_mapping` and `megatron_core` (safety/code_peft.cpp).
void find_peft_code(CodeSearch& search);

}  // namespace precdetect
