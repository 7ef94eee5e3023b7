#pragma once
/// What a global a pickle imports would let it do if an unpickler resolved it: allowed (it rebuilds tensors,
/// arrays or plain containers), dangerous (it can run code or reach files, processes, the network or the import
/// machinery) or unknown. The lists, their sources and what they promise: docs/security.md.

#include <string>
#include <string_view>

#include "precdetect/core/named_enum.h"

namespace precdetect {

enum class GlobalClass {
  kAllowed,    ///< on the allowlist: what torch.load(weights_only=True) accepts, numpy's array rebuilders, and
               ///< the classes of a torch.distributed.checkpoint's .metadata
  kDangerous,  ///< on the dangerous list, or reached through a dotted or dunder name that no data needs
  kUnknown,    ///< on neither: a pickled model class, a config object; an unpickler would import and run it
};

/// snake_case name (JSON `safety.imports[].class`): "allowed", "dangerous", "unknown".
std::string_view global_class_name(GlobalClass kind);

/// What a dangerous global reaches: the families of docs/security.md's dangerous list.
enum class DangerFamily {
  kNone,                  ///< not dangerous
  kCodeExecution,         ///< eval/exec/compile, code objects, TorchScript and compile caches, runpy, debuggers
  kProcess,               ///< os, subprocess, pty, signals, threads: processes and the interpreter's state
  kFilesystem,            ///< opening, writing or removing files (open, shutil, tempfile, logging handlers)
  kNetwork,               ///< sockets, HTTP, mail, browsers
  kImportMachinery,       ///< importlib, __import__, pkgutil.resolve_name, pydoc.locate: any name from a string
  kAttributeAccess,       ///< getattr, operator.attrgetter, dunder and dotted names: any attribute of anything
  kNestedDeserialization  ///< pickle, marshal, torch.load, numpy.load: another unpickler, without the checks
};

/// snake_case name (JSON `safety.imports[].family`), e.g. "code_execution"; "" for kNone.
std::string_view danger_family_name(DangerFamily family);

struct GlobalJudgement {
  GlobalClass kind = GlobalClass::kUnknown;
  DangerFamily family = DangerFamily::kNone;
  std::string why;  ///< for a dangerous global, the list entry or rule that caught it ("os.*", "dotted name")
};

/// Judges `module.name` as a pickle names it, as data: nothing is imported. `__builtin__`/`__builtins__` read as
/// `builtins`; a module inherits a parent's whole-module entry (`os.path` from `os`); a dotted name is judged
/// part by part (`numpy` `prod.os.system` reaches `os`), and a dunder part (`__builtins__`, `__globals__`) is
/// dangerous wherever it appears.
GlobalJudgement judge_global(std::string_view module, std::string_view name);

/// judge_global without its rule that every builtin that is no plain data type is dangerous (a pickle calls what it
/// imports with any arguments it likes): for a loader that resolves a `builtins` name in a namespace of its own
/// first (a Keras config's built-in functions, safety/keras_config). The listed builtins (eval, open, getattr, ...)
/// and dunder and dotted names stay dangerous.
GlobalJudgement judge_listed_global(std::string_view module, std::string_view name);

/// Judges a method reference, `getattr(G, 'attribute')` with G the global `module.owner` (or an instance of it),
/// as the method it names (`name` is `owner.attribute`): dangerous when G is, else as `attribute` of a module
/// `module.owner` (`torch.serialization` `load` is dangerous; a model class's `forward` is unknown).
GlobalJudgement judge_method_reference(std::string_view module, std::string_view name, std::string_view attribute);

}  // namespace precdetect

template <>
struct fmt::formatter<precdetect::GlobalClass>
    : precdetect::NamedEnumFormatter<precdetect::GlobalClass, precdetect::global_class_name> {};
template <>
struct fmt::formatter<precdetect::DangerFamily>
    : precdetect::NamedEnumFormatter<precdetect::DangerFamily, precdetect::danger_family_name> {};
