#include "precdetect/load/pickle/pickle_globals.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <span>
#include <vector>

namespace precdetect {
namespace {

using enum DangerFamily;

/// One entry of the dangerous list: a module, and the names in it that are dangerous ("*": every name, and every
/// submodule). The union of picklescan 1.0.5's `_unsafe_globals`, modelscan 0.8.6's CRITICAL and HIGH lists and
/// fickling's UNSAFE_IMPORTS and UnsafeImportsML (../shared/notes/pickle-safety.md; docs/security.md), plus the
/// string-to-callable resolvers of their published bypasses (pydoc.locate, inspect.getattr_static).
struct DangerEntry {
  std::string_view module;
  std::string_view names;  ///< space-separated, or "*"
  DangerFamily family;
};

constexpr DangerEntry kDangerous[] = {
    {"builtins", "eval exec compile execfile apply breakpoint input __import__ globals locals vars", kCodeExecution},
    {"builtins", "open file", kFilesystem},
    {"builtins", "getattr setattr delattr", kAttributeAccess},
    {"os", "*", kProcess},
    {"posix", "*", kProcess},
    {"nt", "*", kProcess},
    {"subprocess", "*", kProcess},
    {"_posixsubprocess", "*", kProcess},
    {"pty", "*", kProcess},
    {"commands", "*", kProcess},
    {"multiprocessing", "*", kProcess},
    {"sys", "*", kProcess},
    {"signal", "*", kProcess},
    {"_signal", "*", kProcess},
    {"threading", "*", kProcess},
    {"_thread", "*", kProcess},
    {"atexit", "*", kProcess},
    {"gc", "*", kProcess},
    {"site", "*", kProcess},
    {"platform", "*", kProcess},
    {"uuid", "*", kProcess},
    {"_osx_support", "*", kProcess},
    {"_aix_support", "*", kProcess},
    {"pexpect", "*", kProcess},
    {"pipes", "*", kProcess},
    {"asyncio", "*", kProcess},
    {"ctypes", "*", kProcess},
    {"_ctypes", "*", kProcess},
    {"mmap", "*", kProcess},
    {"select", "*", kProcess},
    {"selectors", "*", kProcess},
    {"webbrowser", "*", kNetwork},
    {"socket", "*", kNetwork},
    {"ssl", "*", kNetwork},
    {"socketserver", "*", kNetwork},
    {"http", "*", kNetwork},
    {"httplib", "*", kNetwork},
    {"urllib", "*", kNetwork},
    {"urllib2", "*", kNetwork},
    {"requests", "*", kNetwork},
    {"aiohttp", "*", kNetwork},
    {"smtplib", "*", kNetwork},
    {"imaplib", "*", kNetwork},
    {"ftplib", "*", kNetwork},
    {"poplib", "*", kNetwork},
    {"telnetlib", "*", kNetwork},
    {"nntplib", "*", kNetwork},
    {"xmlrpc", "*", kNetwork},
    {"shutil", "*", kFilesystem},
    {"tempfile", "*", kFilesystem},
    {"filecmp", "*", kFilesystem},
    {"fileinput", "*", kFilesystem},
    {"glob", "*", kFilesystem},
    {"linecache", "*", kFilesystem},
    {"tarfile", "*", kFilesystem},
    {"zipfile", "*", kFilesystem},
    {"shelve", "*", kFilesystem},
    {"sqlite3", "*", kFilesystem},
    {"_sqlite3", "*", kFilesystem},
    {"logging", "*", kFilesystem},
    {"syslog", "*", kFilesystem},
    {"distutils", "*", kFilesystem},
    {"compileall", "*", kFilesystem},
    {"py_compile", "*", kFilesystem},
    {"venv", "*", kFilesystem},
    {"ensurepip", "*", kFilesystem},
    {"pip", "*", kFilesystem},
    {"io", "open open_code FileIO", kFilesystem},
    {"_io", "open open_code FileIO", kFilesystem},
    {"runpy", "*", kCodeExecution},
    {"code", "*", kCodeExecution},
    {"codeop", "*", kCodeExecution},
    {"types", "CodeType FunctionType LambdaType MethodType ModuleType CellType", kCodeExecution},
    {"doctest", "*", kCodeExecution},
    {"unittest", "*", kCodeExecution},
    {"test", "*", kCodeExecution},
    {"timeit", "*", kCodeExecution},
    {"trace", "*", kCodeExecution},
    {"profile", "*", kCodeExecution},
    {"cProfile", "*", kCodeExecution},
    {"pdb", "*", kCodeExecution},
    {"bdb", "*", kCodeExecution},
    {"idlelib", "*", kCodeExecution},
    {"lib2to3", "*", kCodeExecution},
    {"_pyrepl", "*", kCodeExecution},
    {"pydoc", "pipepager pager tempfilepager", kProcess},
    {"_interpreters", "*", kCodeExecution},
    {"_xxsubinterpreters", "*", kCodeExecution},
    {"cloudpickle", "*", kCodeExecution},
    {"torch.jit", "*", kCodeExecution},
    {"torch.hub", "*", kCodeExecution},
    {"torch._dynamo", "*", kCodeExecution},
    {"torch._inductor", "*", kCodeExecution},
    {"torch", "compile load", kNestedDeserialization},
    {"torch.serialization", "load _load _legacy_load", kNestedDeserialization},
    {"torch.storage", "_load_from_bytes", kNestedDeserialization},
    {"torch.utils.bottleneck", "*", kCodeExecution},
    {"torch.utils.collect_env", "*", kProcess},
    {"torch.utils._config_module", "ConfigModule", kCodeExecution},
    {"torch.fx.experimental.symbolic_shapes", "ShapeEnv", kCodeExecution},
    {"torch.utils.data.datapipes.utils.decoder", "basichandlers", kNestedDeserialization},
    {"torch.distributed.elastic.rendezvous.api", "basichandlers", kNestedDeserialization},
    {"numpy.f2py", "*", kCodeExecution},
    {"numpy.distutils", "*", kCodeExecution},
    {"numpy.testing._private.utils", "*", kCodeExecution},
    {"numpy", "load loads fromfile", kNestedDeserialization},
    {"importlib", "*", kImportMachinery},
    {"_frozen_importlib", "*", kImportMachinery},
    {"_frozen_importlib_external", "*", kImportMachinery},
    {"_imp", "*", kImportMachinery},
    {"imp", "*", kImportMachinery},
    {"zipimport", "*", kImportMachinery},
    {"pkgutil", "*", kImportMachinery},
    {"pydoc", "locate", kImportMachinery},
    {"inspect", "*", kAttributeAccess},
    {"operator", "*", kAttributeAccess},
    {"_operator", "*", kAttributeAccess},
    {"functools", "*", kAttributeAccess},
    {"pickle", "*", kNestedDeserialization},
    {"_pickle", "*", kNestedDeserialization},
    {"marshal", "*", kNestedDeserialization},
    {"dill", "*", kNestedDeserialization},
    {"joblib", "*", kNestedDeserialization},
};

/// builtins an unpickler may import and call without reaching anything but data (fickling's SAFE_BUILTINS): not
/// on the allowlist (torch refuses most of them), not dangerous either. Every other builtin is dangerous.
constexpr std::string_view kPlainBuiltins[] = {
    "bool",
    "int",
    "float",
    "complex",
    "str",
    "bytes",
    "bytearray",
    "list",
    "tuple",
    "set",
    "frozenset",
    "dict",
    "len",
    "abs",
    "sum",
    "min",
    "max",
    "round",
    "pow",
    "divmod",
    "sorted",
    "reversed",
    "enumerate",
    "zip",
    "range",
    "map",
    "filter",
    "slice",
    "iter",
    "next",
    "all",
    "any",
    "hash",
    "id",
    "repr",
    "ascii",
    "bin",
    "hex",
    "oct",
    "ord",
    "chr",
    "isinstance",
    "issubclass",
    "object",
    "callable",
    "format",
    "NotImplemented",
    "Ellipsis",
};

/// The allowlist: torch.load(weights_only=True)'s defaults (torch/_weights_only_unpickler.py `_get_allowed_globals`)
/// and numpy's array rebuilders (picklescan's and fickling's safe lists; torch accepts them once registered with
/// torch.serialization.add_safe_globals).
constexpr std::string_view kAllowed[] = {
    "collections.OrderedDict",
    "collections.Counter",
    "torch.nn.parameter.Parameter",
    "torch.serialization._get_layout",
    "torch.Size",
    "torch.Tensor",
    "torch.device",
    "torch.per_tensor_affine",
    "torch.per_tensor_symmetric",
    "torch.per_channel_affine",
    "torch.per_channel_symmetric",
    "torch.per_channel_affine_float_qparams",
    "torch.UntypedStorage",
    "torch._utils._rebuild_parameter",
    "torch._utils._rebuild_parameter_with_state",
    "torch._utils._rebuild_qtensor",
    "torch._utils._rebuild_tensor",
    "torch._utils._rebuild_tensor_v2",
    "torch._utils._rebuild_tensor_v3",
    "torch._utils._rebuild_sparse_tensor",
    "torch._utils._rebuild_meta_tensor_no_storage",
    "torch._utils._rebuild_wrapper_subclass",
    "torch._utils._rebuild_device_tensor_from_numpy",
    "torch._utils._rebuild_device_tensor_from_cpu_tensor",
    "torch._tensor._rebuild_from_type_v2",
    "_codecs.encode",
    "builtins.bytearray",
    "builtins.set",
    "builtins.complex",
    "numpy.core.multiarray._reconstruct",
    "numpy._core.multiarray._reconstruct",
    "numpy.core.multiarray.scalar",
    "numpy._core.multiarray.scalar",
    "numpy.ndarray",
    "numpy.dtype",
};

/// joblib's wrapper of the numpy arrays it writes inline (joblib/numpy_pickle.py): constructed empty, given its
/// state (subclass, shape, order, dtype), it has joblib.load read the array's raw bytes from the stream, or for an
/// object array unpickle the pickle that follows (whose imports are judged as any other). It adds no capability of
/// its own, so it is allowed before the rest of joblib is judged dangerous.
constexpr std::string_view kJoblibArrays[] = {"joblib.numpy_pickle.NumpyArrayWrapper"};

/// What the `.metadata` of a torch.distributed.checkpoint folder pickles (load/dcp/dcp_metadata.h), which dcp.load
/// unpickles with pickle.load: DCP's dataclasses, whose construction and state only set fields (TensorProperties'
/// __setstate__ maps an int to a memory format), the enum of those ints, and the PosixPath of
/// StorageMeta.checkpoint_id: a path object, which touches no file (Python 3.13 pickles it from pathlib._local).
constexpr std::string_view kDcpMetadata[] = {
    "torch.distributed.checkpoint.metadata.Metadata",
    "torch.distributed.checkpoint.metadata.TensorStorageMetadata",
    "torch.distributed.checkpoint.metadata.BytesStorageMetadata",
    "torch.distributed.checkpoint.metadata.ChunkStorageMetadata",
    "torch.distributed.checkpoint.metadata.TensorProperties",
    "torch.distributed.checkpoint.metadata._MEM_FORMAT_ENCODING",
    "torch.distributed.checkpoint.metadata.MetadataIndex",
    "torch.distributed.checkpoint.metadata.StorageMeta",
    "torch.distributed.checkpoint.filesystem._StorageInfo",
    "pathlib.PosixPath",
    "pathlib._local.PosixPath",
};

/// torch dtypes (torch.float16), storage classes (torch.HalfStorage, torch.cuda.HalfStorage) and tensor classes
/// (torch.HalfTensor): names weights_only accepts in torch and torch.cuda.
constexpr std::string_view kTorchTypeStems[] = {
    "Double", "Float",         "Half",         "BFloat16", "Long",  "Int",    "Short",    "Char",    "Byte",
    "Bool",   "ComplexDouble", "ComplexFloat", "QUInt8",   "QInt8", "QInt32", "QUInt4x2", "QUInt2x4"};
constexpr std::string_view kTorchDtypes[] = {"float64",
                                             "double",
                                             "float32",
                                             "float",
                                             "float16",
                                             "half",
                                             "bfloat16",
                                             "int64",
                                             "long",
                                             "int32",
                                             "int",
                                             "int16",
                                             "short",
                                             "int8",
                                             "uint8",
                                             "uint16",
                                             "uint32",
                                             "uint64",
                                             "bool",
                                             "complex32",
                                             "complex64",
                                             "complex128",
                                             "cfloat",
                                             "cdouble",
                                             "chalf",
                                             "qint8",
                                             "quint8",
                                             "qint32",
                                             "quint4x2",
                                             "quint2x4",
                                             "float8_e4m3fn",
                                             "float8_e5m2",
                                             "float8_e4m3fnuz",
                                             "float8_e5m2fnuz",
                                             "float8_e8m0fnu",
                                             "float4_e2m1fn_x2",
                                             "bits8",
                                             "bits16",
                                             "bits1x8",
                                             "bits2x4",
                                             "bits4x2",
                                             "uint1",
                                             "uint2",
                                             "uint3",
                                             "uint4",
                                             "uint5",
                                             "uint6",
                                             "uint7",
                                             "int1",
                                             "int2",
                                             "int3",
                                             "int4",
                                             "int5",
                                             "int6",
                                             "int7"};

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

bool contains(std::span<const std::string_view> list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

bool is_dunder(std::string_view part) { return part.size() > 4 && part.starts_with("__") && part.ends_with("__"); }

std::string_view canonical_module(std::string_view module) {
  if (module == "__builtin__" || module == "__builtins__") return "builtins";
  if (module == "copy_reg") return "copyreg";
  return module;
}

bool torch_type_name(std::string_view module, std::string_view name) {
  if (module != "torch" && module != "torch.cuda") return false;
  if (module == "torch" && contains(kTorchDtypes, name)) return true;
  for (std::string_view stem : kTorchTypeStems)
    if (name.starts_with(stem) && (name.substr(stem.size()) == "Storage" || name.substr(stem.size()) == "Tensor"))
      return true;
  return false;
}

/// The dangerous entry `module` `name` falls under: the module's own entry, or a parent module's whole-module one.
const DangerEntry* listed_danger(std::string_view module, std::string_view name) {
  std::string_view first = name.substr(0, name.find('.'));
  for (const DangerEntry& entry : kDangerous) {
    bool whole = entry.names == "*";
    bool same = module == entry.module;
    bool below =
        module.size() > entry.module.size() && module.starts_with(entry.module) && module[entry.module.size()] == '.';
    if ((whole && (same || below)) || (same && contains(split(entry.names, ' '), first))) return &entry;
  }
  return nullptr;
}

GlobalJudgement dangerous(DangerFamily family, std::string why) {
  return {GlobalClass::kDangerous, family, std::move(why)};
}

/// A dotted name is resolved attribute by attribute (pickle protocol 4's getattr chain): `numpy` `prod.os.system`
/// reaches `os`. Every split of the whole path into module and attribute is judged, and dunder parts reach the
/// interpreter's internals (`__builtins__`, `__globals__`, `__subclasses__`).
std::optional<GlobalJudgement> judge_path(std::string_view module, std::string_view name) {
  std::string path = fmt::format("{}.{}", module, name);
  std::vector<std::string_view> parts = split(path, '.');
  size_t module_parts = split(module, '.').size();
  // The module's own prefixes, then each part of a dotted name as the module an attribute chain reaches.
  for (size_t start = 0; start + 1 < parts.size(); start = std::max(start + 1, module_parts)) {
    for (size_t split_at = start + 1; split_at < parts.size(); ++split_at) {
      std::string prefix = fmt::format("{}", fmt::join(parts.begin() + start, parts.begin() + split_at, "."));
      std::string rest = fmt::format("{}", fmt::join(parts.begin() + split_at, parts.end(), "."));
      if (const DangerEntry* entry = listed_danger(canonical_module(prefix), rest))
        return dangerous(entry->family, fmt::format("{}.{}", entry->module, entry->names == "*" ? "*" : rest));
    }
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    bool main_module = i < module_parts && (parts[i] == "__main__" || parts[i] == "__future__");
    bool reconstructor = module == "copyreg" && (name == "__newobj__" || name == "__newobj_ex__");
    if (is_dunder(parts[i]) && !main_module && !reconstructor)
      return dangerous(kAttributeAccess, fmt::format("dunder name `{}`", parts[i]));
  }
  if (name.find('.') != std::string_view::npos)  // no data needs an attribute chain; an unpickler would walk it
    return dangerous(kAttributeAccess, "dotted name");
  return std::nullopt;
}

}  // namespace

std::string_view global_class_name(GlobalClass kind) {
  switch (kind) {
    case GlobalClass::kAllowed:
      return "allowed";
    case GlobalClass::kDangerous:
      return "dangerous";
    case GlobalClass::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::string_view danger_family_name(DangerFamily family) {
  switch (family) {
    case kNone:
      return "";
    case kCodeExecution:
      return "code_execution";
    case kProcess:
      return "process";
    case kFilesystem:
      return "filesystem";
    case kNetwork:
      return "network";
    case kImportMachinery:
      return "import_machinery";
    case kAttributeAccess:
      return "attribute_access";
    case kNestedDeserialization:
      return "nested_deserialization";
  }
  return "";
}

GlobalJudgement judge_listed_global(std::string_view raw_module, std::string_view name) {
  std::string_view module = canonical_module(raw_module);
  // TorchScript's own pickles (read by torch.jit.load's unpickler, never Python's): its compiled classes and list
  // builders. The archive is unverified as a whole (its code/ is not judged).
  if (module == "__torch__" || module.starts_with("__torch__.") || module == "torch.jit._pickle")
    return {GlobalClass::kUnknown, kNone, ""};
  std::string qualified = fmt::format("{}.{}", module, name);
  if (contains(kJoblibArrays, qualified)) return {GlobalClass::kAllowed, kNone, ""};
  if (auto judged = judge_path(module, name)) return *judged;
  if (torch_type_name(module, name) || contains(kAllowed, qualified) || contains(kDcpMetadata, qualified))
    return {GlobalClass::kAllowed, kNone, ""};
  return {GlobalClass::kUnknown, kNone, ""};
}

GlobalJudgement judge_global(std::string_view raw_module, std::string_view name) {
  GlobalJudgement judged = judge_listed_global(raw_module, name);
  if (judged.kind == GlobalClass::kDangerous || canonical_module(raw_module) != "builtins" ||
      contains(kPlainBuiltins, name))
    return judged;
  return dangerous(kCodeExecution, fmt::format("builtins.{} (not a plain data type)", name));
}

GlobalJudgement judge_method_reference(std::string_view module, std::string_view name, std::string_view attribute) {
  std::string_view owner = name.substr(0, name.size() - std::min(name.size(), attribute.size() + 1));
  GlobalJudgement of_owner = judge_global(module, owner);
  if (of_owner.kind == GlobalClass::kDangerous) return of_owner;
  return judge_global(fmt::format("{}.{}", module, owner), attribute);
}

}  // namespace precdetect
