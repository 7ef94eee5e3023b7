#pragma once
/// A restricted pickle machine: it reads the object graph of a torch.save pickle without ever executing code.
/// Only an allowlist of torch rebuild functions and containers is interpreted; every other global becomes an
/// inert Opaque object that is recorded and never called.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "precdetect/core/dtype.h"

namespace precdetect::pickle {

struct Value;
using Ref = std::shared_ptr<Value>;

struct None {};
struct Bytes {
  std::string data;
};
struct Tuple {
  std::vector<Ref> items;
};
struct List {
  std::vector<Ref> items;
};
struct Dict {
  std::vector<std::pair<Ref, Ref>> items;  ///< insertion order, as OrderedDict keeps it
};
struct Global {
  std::string module, name;
  std::optional<size_t> import;  ///< its entry in the run's PickleLog, when one is kept
  std::string qualified() const { return module + "." + name; }
};
/// A persistent id ('storage', type, key, location, numel): one storage record of the checkpoint.
struct Storage {
  std::string key;
  std::string type;    ///< e.g. "FloatStorage", "UntypedStorage"
  uint64_t numel = 0;  ///< elements of the storage's dtype (bytes for UntypedStorage)
};
/// _rebuild_tensor_v2/v3: a view (offset, size, stride) of a storage.
struct Tensor {
  Storage storage;
  std::optional<DType> dtype;  ///< nullopt: a dtype precdetect does not know (quantized, complex128)
  std::string dtype_name;      ///< the torch name, for messages
  uint64_t storage_offset = 0;
  std::vector<int64_t> size, stride;
};
/// An object whose class is not on the allowlist: its constructor arguments and BUILD state, never run, and the
/// items a pickle set or appended on it (a defaultdict's entries, a list subclass's elements) as a Dict or List.
struct Opaque {
  Global type;
  Ref args;
  Ref state;
  Ref contents;
  bool instance = false;  ///< made by NEWOBJ, OBJ or INST: an instance of `type` (not what a call of it returned)
};

struct Value {
  std::variant<None, bool, int64_t, double, std::string, Bytes, Tuple, List, Dict, Global, Storage, Tensor, Opaque> v;
};

/// Owns every value of one pickle's graph, and breaks its reference cycles when released.
struct Arena {
  std::vector<Ref> values;
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena();
};

/// The outcome of one pickle: its root object, where it ended, and the globals that were refused. The graph
/// lives as long as the Result (or a copy of it).
struct Result {
  Ref root;
  uint64_t end = 0;                         ///< offset just past the STOP opcode
  uint64_t size = 0;                        ///< bytes from the first opcode through STOP
  std::set<std::string> not_called;         ///< globals outside the allowlist that the pickle asked to call
  std::map<std::string, Storage> storages;  ///< every storage the pickle references, by key
  std::vector<Ref> tensors;                 ///< every tensor the pickle rebuilt, in order, reachable or not
  std::shared_ptr<Arena> arena;
};

/// A global a pickle imports (GLOBAL, STACK_GLOBAL, INST), where it does, and whether the pickle goes on to call
/// it (REDUCE, NEWOBJ, OBJ, INST) or set state on it (BUILD): what an unpickler would do with it.
struct Import {
  std::string module, name;
  uint64_t offset = 0;  ///< of the importing opcode, in the file
  bool called = false;
  /// A method reference, `getattr(G, 'forward')` as pickle writes a method, when G is a global of the pickle or an
  /// instance of one: `name` is G's (or its class's) name and the attribute (`Segment.forward`), `attribute` the
  /// attribute, `spelling` how the pickle wrote it. Both empty for a global imported by name.
  std::string attribute, spelling;
  /// builtins.getattr used for method references (each logged as an import of its own). It counts only while
  /// `called` is false: the pickle neither called it any other way nor held it as data.
  bool references_methods = false;
};
/// What no pickler writes and only an attack needs (docs/security.md): each makes a pickle unsafe on its own.
enum class TamperingKind {
  /// An opcode that begins inside a FRAME and ends past it. Unpicklers that enforce frames refuse it, those that
  /// do not (CPython's C unpickler before python/cpython#154848) read on: the two see different opcodes.
  kFrameStraddled,
  kNestedFrame,    ///< a FRAME opened before the previous one ended, the same divergence
  kStateOnCode,    ///< BUILD on an imported module, class or function: it rewrites attributes of live code
  kDynamicImport,  ///< STACK_GLOBAL whose operands are no strings: a name computed while unpickling
};

/// "frame_straddled", "nested_frame", "state_on_code", "dynamic_import" (JSON `safety.tampering[].kind`).
std::string_view tampering_kind_name(TamperingKind kind);

struct Tampering {
  TamperingKind kind = TamperingKind::kFrameStraddled;
  uint64_t offset = 0;  ///< of the opcode, in the file
  std::string detail;   ///< what it is, in words: "BUILD on collections.OrderedDict"
};

/// What a pickle would do that a safety judgement needs: its imports and its tampering. Appended to while a
/// pickle runs, so a pickle that fails midway still shows what it did before.
struct PickleLog {
  std::vector<Import> imports;
  std::vector<Tampering> tampering;
};

/// Turns a persistent id into the object it stands for; returns nullptr for an id it does not know.
using PersistentResolver = std::function<Ref(const Ref& id)>;

/// Runs the pickle that starts at `bytes[0]`; `base` is its offset in `path` (for messages). Persistent ids
/// go to `resolve` first; the default reading is torch's ('storage', type, key, location, numel). Throws
/// Error(kInvalidPickle) with path and offset for unknown opcodes, stack underflow, memo misuse, truncation or
/// limits exceeded (stack, memo, nesting). With a `log`, every import and tampering is logged there as it is read,
/// and a STACK_GLOBAL of operands that are no strings is logged and read on (without one it is an error).
Result run(std::span<const std::byte> bytes, const std::filesystem::path& path, uint64_t base = 0,
           const PersistentResolver& resolve = nullptr, PickleLog* log = nullptr);

/// Wraps a value, for resolvers.
Ref make_value(Value value);

/// A dict key as a name: its text, or its decimal digits for an int; "?" for a key of any other type.
std::string key_text(const Ref& key);

/// `path.part`, or `part` at the root: how the graph's walkers name what they find ("args.bf16").
std::string join_key(const std::string& path, std::string_view part);

/// The storage dtype a legacy/typed storage class names ("FloatStorage" -> F32); nullopt when unknown.
std::optional<DType> storage_dtype(std::string_view storage_type);

}  // namespace precdetect::pickle
