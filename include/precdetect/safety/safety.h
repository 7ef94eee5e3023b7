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

/// Python code the model asks its loader to import and run: transformers does with `trust_remote_code=True`
/// (`auto_map`, `custom_pipelines`), which many wrappers pass for the user. Not judged: unverified.
struct CustomCode {
  std::string file;                  ///< the Python file ("modeling_evil.py"), in the model's folder or not there
  std::vector<std::string> classes;  ///< what is imported from it ("modeling_evil.EvilModel"); empty for a file alone
  std::string named_by;              ///< "config.json auto_map", "tokenizer_config.json auto_map", ... or "" (beside)
};

struct Safety {
  std::vector<std::string> files;          ///< every file examined, weights and the pickles beside them
  std::vector<SafetyImport> imports;       ///< each global once per pickle, at its first import
  std::vector<SafetyTampering> tampering;  ///< what no pickler writes and only an attack needs
  std::vector<std::string> unverified;     ///< what could not be judged, and why ("x.pt: a TorchScript archive ...")
  std::vector<CustomCode> custom_code;     ///< Python code loading may import (unverified)

  /// kUnsafe with a dangerous import or any tampering; else kUnverified with an unknown import, custom code or
  /// anything unverified; else kSafe.
  SafetyVerdict verdict() const;
  /// The first dangerous import, or nullptr.
  const SafetyImport* first_dangerous() const;
  /// Tampering, once per kind and file (a link out of the model is met by the walk and by every open through it).
  void add_tampering(SafetyTampering item);
  /// What stopped the examination of `where`, or the model's reading: a path out of the model (Error kPathEscape)
  /// is path_escape tampering, anything else unverified; never passed.
  void add_failure(const std::exception& failure, const std::string& where);
};

/// The verdict in words: "safe", "unsafe: posix.system (process) in evil.pt", "unsafe: state_on_code (BUILD on
/// collections.OrderedDict) in evil.pt", "unverified: 2 unknown globals (transformers.training_args.TrainingArguments,
/// ...)", "unverified: custom code (modeling_x.py: modeling_x.XModel)".
std::string safety_text(const Safety& safety);

}  // namespace precdetect

template <>
struct fmt::formatter<precdetect::SafetyVerdict>
    : precdetect::NamedEnumFormatter<precdetect::SafetyVerdict, precdetect::safety_verdict_name> {};
