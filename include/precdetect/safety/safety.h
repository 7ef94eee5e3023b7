#pragma once
/// Is a model safe to load? What every pickle it holds (and every pickle beside it in its folder) would import
/// and call, judged against the lists of docs/security.md. Nothing is ever executed to find out.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "precdetect/core/named_enum.h"
#include "precdetect/load/file_format.h"
#include "precdetect/load/pickle/pickle.h"
#include "precdetect/load/pickle/pickle_globals.h"

namespace precdetect {

enum class SafetyVerdict {
  kSafe,        ///< only allowlisted globals (or no pickle at all: safetensors)
  kUnsafe,      ///< a dangerous global
  kUnverified,  ///< a global on neither list, or something the examination could not follow or open
};

/// snake_case name (JSON `safety.verdict`): "safe", "unsafe", "unverified".
std::string_view safety_verdict_name(SafetyVerdict verdict);

/// One global a pickle imports, judged.
struct SafetyImport {
  std::string module, name;
  GlobalJudgement judgement;
  /// How the pickle wrote a method reference (`builtins.getattr(ultralytics.nn.modules.head.Segment, 'forward')`),
  /// which is judged as the method it names; empty for a global imported by name.
  std::string spelling;
  std::string file;     ///< the file, and after "!" the archive member when the pickle is one ("x.pt!archive/data.pkl")
  uint64_t offset = 0;  ///< of the importing opcode, in the file (in the member, for a compressed member)
  bool called = false;  ///< called (REDUCE, NEWOBJ, OBJ, INST) or given state (BUILD): not only imported
  std::string qualified() const { return module + "." + name; }
};

/// A kind of tampering: a pickle's (the pickle machine's) or a file's outside any pickle.
using TamperingKindOf = std::variant<pickle::TamperingKind, FileTampering>;

/// The kind's snake_case name (JSON `safety.tampering[].kind`): "state_on_code", "path_escape", ...
std::string_view tampering_name(const TamperingKindOf& kind);

/// Tampering, where it is.
struct SafetyTampering {
  TamperingKindOf kind = pickle::TamperingKind::kFrameStraddled;
  std::string detail;  ///< what it is, in words: "BUILD on collections.OrderedDict", "model.onnx.data -> /etc/passwd"
  std::string file;    ///< as SafetyImport::file; for a chat template "tokenizer_config.json!chat_template"
  uint64_t offset = 0;
};

/// Whether a loader asks the user before it imports code a model names (docs/security.md, "Code the loaders
/// import").
enum class CodeConsent {
  kAsked,     ///< every release asks first (`trust_remote_code`, a prompt, an allowlist the user extends): unverified
  kNotAsked,  ///< a release imports it when the model is loaded, without asking: unsafe
};

/// snake_case name (JSON `safety.custom_code[].consent`): "asked", "not_asked".
std::string_view code_consent_name(CodeConsent consent);

/// Python code a loader imports from the model's files, or from another repository a config names, when the model
/// is loaded: transformers' `auto_map` with `trust_remote_code=True` (which many wrappers pass for the user), a
/// sentence-transformers custom module, ... (safety/custom_code.h). The
/// code itself is not judged: precdetect reads no Python.
struct CustomCode {
  /// The Python file, from the model's root ("modeling_evil.py", "unet/my_unet.py"); in another repository
  /// "org/repo: modeling_x.py"
  std::string file;
  std::vector<std::string> classes;  ///< what is imported from it ("modeling_evil.EvilModel"); empty for a file alone
  /// The config and the key that name it ("config.json auto_map.AutoModel", "model_index.json unet"), or "" for a
  /// Python file beside the weights that no config names
  std::string named_by;
  std::string repository;  ///< another repository the reference names ("org/repo"), never fetched; "" for the model
  CodeConsent consent = CodeConsent::kAsked;
  std::string why;  ///< which loader imports it and when: "sentence-transformers before 6.0 imports it ..."
};

struct Safety {
  std::vector<std::string> files;          ///< every file examined, weights and the pickles beside them
  std::vector<SafetyImport> imports;       ///< each global once per pickle, at its first import
  std::vector<SafetyTampering> tampering;  ///< what no pickler writes and only an attack needs
  std::vector<std::string> unverified;     ///< what could not be judged, and why ("x.pt: a TorchScript archive ...")
  std::vector<CustomCode> custom_code;     ///< Python code loading may import

  /// kUnsafe with a dangerous import, any tampering or custom code imported without consent; else kUnverified with
  /// an unknown import, custom code or anything unverified; else kSafe.
  SafetyVerdict verdict() const;
  /// The first dangerous import, or nullptr.
  const SafetyImport* first_dangerous() const;
  /// The first custom code a loader imports without asking (CodeConsent::kNotAsked), or nullptr.
  const CustomCode* first_unasked_code() const;
  /// Tampering, once per kind and file however spelled (a link out of the model is met by the walk of its folder,
  /// by the inventory of the input, and by every open through it).
  void add_tampering(SafetyTampering item);
  /// What stopped the examination of `where`, or the model's reading: a path out of the model (Error kPathEscape)
  /// is path_escape tampering, anything else unverified; never passed.
  void add_failure(const std::exception& failure, const std::string& where);
};

/// The verdict in words: "safe", "unsafe: posix.system (process) in evil.pt", "unsafe: state_on_code (BUILD on
/// collections.OrderedDict) in evil.pt", "unverified: 2 unknown globals (transformers.training_args.TrainingArguments,
/// ...)", "unsafe: custom code imported without consent (custom_st.py: custom_st.Scale, named by modules.json
/// [1].type)", "unverified: custom code (modeling_x.py: modeling_x.XModel)".
std::string safety_text(const Safety& safety);

}  // namespace precdetect

template <>
struct fmt::formatter<precdetect::SafetyVerdict>
    : precdetect::NamedEnumFormatter<precdetect::SafetyVerdict, precdetect::safety_verdict_name> {};
