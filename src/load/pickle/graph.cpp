#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "precdetect/load/pickle/machine.h"

namespace precdetect::pickle {
namespace {

struct TorchDtypeName {
  std::string_view name;
  DType dtype;
};
// torch dtype globals (torch.float8_e4m3fn) and storage classes (torch.HalfStorage) that map to stored dtypes.
constexpr TorchDtypeName kTorchDtypes[] = {
    {"float64", DType::F64},
    {"double", DType::F64},
    {"float32", DType::F32},
    {"float", DType::F32},
    {"float16", DType::F16},
    {"half", DType::F16},
    {"bfloat16", DType::BF16},
    {"float8_e4m3fn", DType::F8_E4M3},
    {"float8_e5m2", DType::F8_E5M2},
    {"float8_e8m0fnu", DType::F8_E8M0},
    {"float8_e4m3fnuz", DType::F8_E4M3FNUZ},
    {"float8_e5m2fnuz", DType::F8_E5M2FNUZ},
    {"int64", DType::I64},
    {"long", DType::I64},
    {"int32", DType::I32},
    {"int", DType::I32},
    {"int16", DType::I16},
    {"short", DType::I16},
    {"int8", DType::I8},
    {"uint8", DType::U8},
    {"uint16", DType::U16},
    {"uint32", DType::U32},
    {"uint64", DType::U64},
    {"bool", DType::BOOL},
    {"complex64", DType::C64},
    {"cfloat", DType::C64},
};
constexpr TorchDtypeName kStorageTypes[] = {
    {"DoubleStorage", DType::F64},    {"FloatStorage", DType::F32},        {"HalfStorage", DType::F16},
    {"BFloat16Storage", DType::BF16}, {"LongStorage", DType::I64},         {"IntStorage", DType::I32},
    {"ShortStorage", DType::I16},     {"CharStorage", DType::I8},          {"ByteStorage", DType::U8},
    {"BoolStorage", DType::BOOL},     {"ComplexFloatStorage", DType::C64},
};

std::optional<DType> lookup(std::span<const TorchDtypeName> table, std::string_view name) {
  for (const auto& entry : table)
    if (entry.name == name) return entry.dtype;
  return std::nullopt;
}

bool is_getattr(std::string_view name) {
  return name == "builtins.getattr" || name == "__builtin__.getattr" || name == "__builtins__.getattr";
}

/// An attribute a method reference may name: a Python identifier, not a dunder (`__globals__`, `__class__` reach
/// the interpreter's internals).
bool is_plain_attribute(std::string_view name) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  bool dunder = name.size() > 4 && name.starts_with("__") && name.ends_with("__");
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) && !dunder &&
         std::all_of(name.begin(), name.end(), word);
}

}  // namespace

Ref Machine::import_global(std::string module, std::string name, uint64_t at) {
  Global global{std::move(module), std::move(name)};
  if (log_) {  // each global once, at its first import: a pickle may import one a million times
    auto [entry, fresh] = import_index_.try_emplace(global.module + "\n" + global.name, log_->imports.size());
    if (fresh && import_index_.size() > kMaxImports) bad("more distinct globals than any checkpoint imports");
    if (fresh) log_->imports.push_back({global.module, global.name, at});
    global.import = entry->second;
  }
  return make(std::move(global));
}

/// The import behind `value` is used as an unpickler would use it: called, or given state.
void Machine::mark_called(const Ref& value) {
  if (const auto* global = std::get_if<Global>(&value->v); global && global->import && log_)
    log_->imports[*global->import].called = true;
}

/// The import a STACK_GLOBAL makes from the two strings on the stack, however they got there (memo, DUP, ...).
/// Operands that are no strings were computed while unpickling: with a log that is tampering, and the import an
/// unknown one; without, the pickle is not one torch.save writes.
Ref Machine::stack_global(const Ref& module, const Ref& name, uint64_t at) {
  const auto* module_text = std::get_if<std::string>(&module->v);
  const auto* name_text = std::get_if<std::string>(&name->v);
  if (module_text && name_text) return import_global(*module_text, *name_text, at);
  if (!log_) bad(fmt::format("STACK_GLOBAL {} has the wrong type", module_text ? "name" : "module"));
  tampered(TamperingKind::kDynamicImport, at, "STACK_GLOBAL of operands that are no strings");
  return make(Global{"?", "?"});
}

/// NEWOBJ/OBJ/INST: an instance of a class we never construct.
Ref Machine::construct(const Ref& type, const Ref& args) {
  mark_called(type);
  const auto* global = std::get_if<Global>(&type->v);
  Global name = global ? *global : Global{"?", "?"};
  not_called_.insert(name.qualified());
  return make(Opaque{.type = name, .args = args, .instance = true});
}

/// `getattr(G, 'name')`, how pickle writes a method (a bound method reduces to it), read as the method `G.name`
/// when G is a global this pickle imported, or an instance of one, and `name` a plain attribute: logged as an
/// import of that name, with the pickle's spelling, and returned as that global (so that a call of it is seen).
/// Anything else (a computed or dunder name, G the result of a call) is a call of getattr.
std::optional<Ref> Machine::method_reference(const Global& getattr, const Tuple& args) {
  if (args.items.size() != 2) return std::nullopt;
  const auto* attribute = std::get_if<std::string>(&args.items[1]->v);
  const auto* object = std::get_if<Opaque>(&args.items[0]->v);
  const Global* owner = object && object->instance ? &object->type : std::get_if<Global>(&args.items[0]->v);
  if (!attribute || !is_plain_attribute(*attribute) || !owner || owner->module == "?") return std::nullopt;
  Global method{owner->module, fmt::format("{}.{}", owner->name, *attribute)};
  if (log_ && getattr.import) {
    std::string spelling =
        fmt::format("{}({}, '{}')", getattr.qualified(),
                    object ? fmt::format("<{} object>", owner->qualified()) : owner->qualified(), *attribute);
    auto [entry, fresh] = import_index_.try_emplace(spelling, log_->imports.size());
    if (fresh && import_index_.size() > kMaxImports) bad("more distinct globals than any checkpoint imports");
    if (fresh)
      log_->imports.push_back({.module = method.module,
                               .name = method.name,
                               .offset = cursor_.offset() - 1,
                               .attribute = *attribute,
                               .spelling = std::move(spelling)});
    method.import = entry->second;
    log_->imports[*getattr.import].references_methods = true;
  }
  return make(std::move(method));
}

/// getattr held by a container (an argument, a state, an item) is handed to code the machine does not follow:
/// as good as called.
void Machine::note_getattr_held_as_data() {
  if (!log_ || std::none_of(log_->imports.begin(), log_->imports.end(),
                            [](const Import& item) { return item.references_methods; }))
    return;
  auto note = [&](const Ref& held) {
    const auto* global = held ? std::get_if<Global>(&held->v) : nullptr;
    if (global && global->import && log_->imports[*global->import].references_methods)
      log_->imports[*global->import].called = true;
  };
  note(stack_.back());
  for (const Ref& value : arena_->values) {
    if (const auto* tuple = std::get_if<Tuple>(&value->v))
      std::for_each(tuple->items.begin(), tuple->items.end(), note);
    if (const auto* list = std::get_if<List>(&value->v)) std::for_each(list->items.begin(), list->items.end(), note);
    if (const auto* dict = std::get_if<Dict>(&value->v))
      for (const auto& [key, item] : dict->items) note(key), note(item);
    if (const auto* opaque = std::get_if<Opaque>(&value->v))
      note(opaque->args), note(opaque->state), note(opaque->contents);
  }
}

/// BUILD sets an object's state. Opaque objects keep it (it holds a module's parameters); dicts and tensors
/// ignore it (torch puts state_dict._metadata there).
void Machine::build(Ref& target, const Ref& state) {
  mark_called(target);
  if (const auto* global = std::get_if<Global>(&target->v))  // a known way to smuggle names in (docs/security.md)
    tampered(TamperingKind::kStateOnCode, cursor_.offset() - 1, fmt::format("BUILD on {}", global->qualified()));
  if (auto* object = std::get_if<Opaque>(&target->v)) {
    object->state = state;
    if (reads_inline_arrays_ && object->instance && object->type.qualified() == "joblib.numpy_pickle.NumpyArrayWrapper")
      note_inline_array(*object);
  }
}

/// `_rebuild_from_type_v2(_rebuild_wrapper_subclass, cls, (cls, dtype, size, ...), state)`: a tensor subclass
/// (torchao's quantized tensors) that an unpickler constructs as `cls` and then gives `state`, its attributes, the
/// inner tensors among them (torch's _set_obj_state). Kept as the state of the wrapper's Opaque, whose first
/// argument names the class; the class is as good as called.
void Machine::keep_subclass_state(const Ref& rebuilt, const Ref& state) {
  auto* wrapper = std::get_if<Opaque>(&rebuilt->v);
  if (wrapper == nullptr || wrapper->type.qualified() != "torch._utils._rebuild_wrapper_subclass") return;
  const auto* args = std::get_if<Tuple>(&wrapper->args->v);
  const auto* type = args && !args->items.empty() ? std::get_if<Global>(&args->items[0]->v) : nullptr;
  if (type == nullptr) return;
  mark_called(args->items[0]);
  not_called_.insert(type->qualified());
  wrapper->state = state;
}

Ref Machine::call(const Ref& callable, const Ref& args, int depth) {
  if (depth > kMaxCallDepth) bad("nested rebuild calls too deep");
  const auto* global = std::get_if<Global>(&callable->v);
  const auto* tuple = std::get_if<Tuple>(&args->v);
  std::string name = global ? global->qualified() : "?";
  if (tuple && is_getattr(name))
    if (std::optional<Ref> method = method_reference(*global, *tuple)) return *method;
  mark_called(callable);
  if (tuple != nullptr) {
    const auto& items = tuple->items;
    if (name == "collections.OrderedDict" || name == "builtins.dict" || name == "__builtin__.dict") {
      if (items.empty()) return make(Dict{});
      if (std::optional<Dict> dict = mapping_from(items[0]); dict && items.size() == 1) return make(std::move(*dict));
    }
    if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor")
      return rebuild_tensor(items, std::nullopt);
    if (name == "torch._utils._rebuild_tensor_v3") {
      if (items.size() < 7) bad("_rebuild_tensor_v3 needs 7 arguments");
      return rebuild_tensor(items, as<Global>(items[6], "_rebuild_tensor_v3 dtype").name);
    }
    if ((name == "torch._utils._rebuild_parameter" || name == "torch._utils._rebuild_parameter_with_state") &&
        !items.empty())
      return items[0];
    if (name == "torch._tensor._rebuild_from_type_v2" && items.size() >= 3) {
      Ref rebuilt = call(items[0], items[2], depth + 1);
      if (items.size() >= 4) keep_subclass_state(rebuilt, items[3]);
      return rebuilt;
    }
  }
  not_called_.insert(name);
  return make(Opaque{.type = global ? *global : Global{"?", "?"}, .args = args});
}

Ref Machine::rebuild_tensor(const std::vector<Ref>& args, std::optional<std::string> dtype_name) {
  if (args.size() < 4) bad("_rebuild_tensor needs storage, offset, size and stride");
  // The storage is a persistent id's result; some hand-made archives (burn's tar fixture) pass the id tuple itself.
  auto bare = std::holds_alternative<Storage>(args[0]->v) ? std::nullopt : storage_id(args[0]);
  Tensor tensor{.storage = bare ? *bare : as<Storage>(args[0], "tensor storage")};
  int64_t offset = as<int64_t>(args[1], "tensor storage offset");
  if (offset < 0) bad("negative storage offset");
  tensor.storage_offset = static_cast<uint64_t>(offset);
  for (const Ref& dim : as<Tuple>(args[2], "tensor size").items) tensor.size.push_back(as<int64_t>(dim, "tensor size"));
  for (const Ref& dim : as<Tuple>(args[3], "tensor stride").items)
    tensor.stride.push_back(as<int64_t>(dim, "tensor stride"));
  if (tensor.size.size() != tensor.stride.size()) bad("tensor size and stride differ in rank");
  tensor.dtype_name = dtype_name.value_or(tensor.storage.type);
  tensor.dtype = dtype_name ? lookup(kTorchDtypes, *dtype_name) : storage_dtype(tensor.storage.type);
  tensors_.push_back(make(std::move(tensor)));
  return tensors_.back();
}

/// ('storage', type, key, location, numel[, legacy view metadata]) names a storage record; nullopt otherwise.
std::optional<Storage> Machine::storage_id(const Ref& id) {
  const auto* tuple = std::get_if<Tuple>(&id->v);
  if (tuple == nullptr || tuple->items.size() < 5) return std::nullopt;
  const auto& items = tuple->items;
  const auto* tag = std::get_if<std::string>(&items[0]->v);
  if (tag == nullptr || *tag != "storage") return std::nullopt;
  Storage storage{.type = as<Global>(items[1], "storage type").name};
  if (const auto* key = std::get_if<std::string>(&items[2]->v))
    storage.key = *key;
  else
    storage.key = std::to_string(as<int64_t>(items[2], "storage key"));
  int64_t numel = as<int64_t>(items[4], "storage size");
  if (numel < 0) bad("negative storage size");
  storage.numel = static_cast<uint64_t>(numel);
  if (items.size() > 5 && !std::holds_alternative<None>(items[5]->v)) bad("legacy storage views are not supported");
  storages_[storage.key] = storage;
  return storage;
}

Ref Machine::persistent(const Ref& pid) {
  if (resolve_)
    if (Ref resolved = resolve_(pid)) return resolved;
  if (auto storage = storage_id(pid)) return make(std::move(*storage));
  return make(Opaque{.type = Global{"persistent", "id"}, .args = pid});
}

std::optional<DType> storage_dtype(std::string_view storage_type) { return lookup(kStorageTypes, storage_type); }

Ref make_value(Value value) { return std::make_shared<Value>(std::move(value)); }

std::string_view tampering_kind_name(TamperingKind kind) {
  switch (kind) {
    case TamperingKind::kFrameStraddled:
      return "frame_straddled";
    case TamperingKind::kNestedFrame:
      return "nested_frame";
    case TamperingKind::kStateOnCode:
      return "state_on_code";
    case TamperingKind::kDynamicImport:
      return "dynamic_import";
  }
  return "frame_straddled";
}

std::string key_text(const Ref& key) {
  if (const auto* text = std::get_if<std::string>(&key->v)) return *text;
  if (const auto* number = std::get_if<int64_t>(&key->v)) return std::to_string(*number);
  return "?";
}

std::string join_key(const std::string& path, std::string_view part) {
  return path.empty() ? std::string(part) : path + "." + std::string(part);
}

Arena::~Arena() {
  // A pickle can build containers that hold themselves (through the memo); emptying every container first
  // lets the shared pointers free the whole graph.
  // get_if, not std::visit: a destructor must not throw, and visit may (bad_variant_access).
  for (const Ref& value : values) {
    if (auto* tuple = std::get_if<Tuple>(&value->v)) tuple->items.clear();
    if (auto* list = std::get_if<List>(&value->v)) list->items.clear();
    if (auto* dict = std::get_if<Dict>(&value->v)) dict->items.clear();
    if (auto* object = std::get_if<Opaque>(&value->v))
      object->args.reset(), object->state.reset(), object->contents.reset();
  }
}

}  // namespace precdetect::pickle
