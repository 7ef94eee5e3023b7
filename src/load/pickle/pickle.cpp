#include "precdetect/load/pickle/pickle.h"

#include <fmt/format.h>

#include <bit>
#include <unordered_map>

#include "precdetect/core/byte_cursor.h"
#include "precdetect/core/bytes.h"
#include "precdetect/core/error.h"

namespace precdetect::pickle {
namespace {

// Limits far above any real checkpoint and far below what would exhaust memory.
constexpr size_t kMaxStack = 1 << 22;
constexpr size_t kMaxMemo = 1 << 24;
constexpr size_t kMaxMarks = 1 << 12;
constexpr int kMaxCallDepth = 64;
constexpr size_t kMaxImports = 1 << 12;  // distinct globals; real checkpoints import a few dozen

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

class Machine {
 public:
  Machine(std::span<const std::byte> bytes, const std::filesystem::path& path, uint64_t base,
          const PersistentResolver& resolve, PickleLog* log)
      : cursor_(bytes, path, ErrorCode::kInvalidPickle, "pickle", base), resolve_(resolve), log_(log) {}

  Result run() {
    while (true) {
      cursor_.mark();  // errors name the opcode being read
      uint64_t at = cursor_.offset();
      uint8_t op = byte();
      if (op != '.') step(op);  // STOP
      leave_frame(at);
      if (op == '.') break;
    }
    if (stack_.size() != 1 || !marks_.empty()) bad("STOP with an unbalanced stack");
    return {stack_.back(),
            cursor_.offset(),
            cursor_.position(),
            std::move(not_called_),
            std::move(storages_),
            std::move(tensors_),
            arena_};
  }

 private:
  /// Every value the machine creates is kept in the arena, which breaks reference cycles when released.
  template <typename T>
  Ref make(T value) {
    Ref created = std::make_shared<Value>(Value{std::move(value)});
    arena_->values.push_back(created);
    return created;
  }

  [[noreturn]] void bad(std::string_view what) const { cursor_.fail(what); }

  void tampered(TamperingKind kind, uint64_t at, std::string detail) {
    if (log_) log_->tampering.push_back({kind, at, std::move(detail)});
  }

  /// FRAME: the frame's bytes follow inline, and are read inline (as CPython's C unpickler read them before it
  /// enforced frames); a frame opened inside another is tampering.
  void enter_frame() {
    uint64_t at = cursor_.offset() - 1;
    uint64_t length = le(8);
    if (frame_end_ && at < *frame_end_)
      tampered(TamperingKind::kNestedFrame, at,
               fmt::format("a FRAME opened {} bytes before the previous one ends", *frame_end_ - at));
    frame_end_ = checked_add(cursor_.offset(), length).value_or(UINT64_MAX);  // past any end: never closes
  }

  /// After the opcode that began at `at`: one that began inside the frame and ended past it straddles it.
  void leave_frame(uint64_t at) {
    if (!frame_end_ || cursor_.offset() < *frame_end_) return;
    if (at < *frame_end_ && cursor_.offset() > *frame_end_)
      tampered(TamperingKind::kFrameStraddled, at,
               fmt::format("an opcode runs {} bytes past the end of its FRAME", cursor_.offset() - *frame_end_));
    frame_end_.reset();
  }

  uint8_t byte() { return cursor_.le<uint8_t>(); }
  std::string_view take(uint64_t n) { return cursor_.text(n); }
  /// An n-byte little-endian length or integer (n: 1, 2, 4 or 8).
  uint64_t le(size_t n) { return read_le<uint64_t>(cursor_.bytes(n), 0, n); }
  std::string line() {
    std::string text;
    while (true) {
      char c = static_cast<char>(byte());
      if (c == '\n') return text;
      text += c;
    }
  }

  void push(Ref value) {
    if (stack_.size() >= kMaxStack) bad("stack limit exceeded");
    stack_.push_back(std::move(value));
  }
  Ref pop() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) bad("stack underflow");
    Ref value = std::move(stack_.back());
    stack_.pop_back();
    return value;
  }
  Ref& top() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) bad("stack underflow");
    return stack_.back();
  }
  std::vector<Ref> pop_mark() {
    if (marks_.empty()) bad("no MARK to pop to");
    std::vector<Ref> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }

  void memo_put(uint64_t index) {
    if (memo_.size() >= kMaxMemo && !memo_.count(index)) bad("memo limit exceeded");
    memo_[index] = top();
  }
  Ref memo_get(uint64_t index) {
    auto found = memo_.find(index);
    if (found == memo_.end()) bad(fmt::format("memo entry {} was never stored", index));
    return found->second;
  }

  template <typename T>
  T& as(const Ref& value, std::string_view what) {
    auto* typed = std::get_if<T>(&value->v);
    if (typed == nullptr) bad(fmt::format("{} has the wrong type", what));
    return *typed;
  }

  /// Where SETITEM(S) puts entries: a dict, or the contents of an object that is not on the allowlist (pickle
  /// fills a defaultdict or an OrderedDict subclass this way after constructing it).
  Dict& dict_target(const Ref& target) {
    if (auto* object = std::get_if<Opaque>(&target->v)) {
      if (!object->contents) object->contents = make(Dict{});
      return as<Dict>(object->contents, "SETITEM target");
    }
    return as<Dict>(target, "SETITEM target");
  }
  /// Where APPEND(S) puts elements: a list, or the contents of an object that is not on the allowlist.
  List& list_target(const Ref& target) {
    if (auto* object = std::get_if<Opaque>(&target->v)) {
      if (!object->contents) object->contents = make(List{});
      return as<List>(object->contents, "APPEND target");
    }
    return as<List>(target, "APPEND target");
  }

  /// The entries a dict or OrderedDict is constructed from: a mapping, or a list or tuple of two-item lists or
  /// tuples (Python 2-era state dicts pickle `OrderedDict([[key, tensor], ...])`). Nullopt for anything else.
  std::optional<Dict> mapping_from(const Ref& source) {
    if (const auto* dict = std::get_if<Dict>(&source->v)) return *dict;
    const auto* list = std::get_if<List>(&source->v);
    const auto* tuple = std::get_if<Tuple>(&source->v);
    if (!list && !tuple) return std::nullopt;
    Dict dict;
    for (const Ref& pair : list ? list->items : tuple->items) {
      const auto* pair_list = std::get_if<List>(&pair->v);
      const auto* pair_tuple = std::get_if<Tuple>(&pair->v);
      const std::vector<Ref>* items = pair_list ? &pair_list->items : pair_tuple ? &pair_tuple->items : nullptr;
      if (!items || items->size() != 2) return std::nullopt;
      dict.items.emplace_back((*items)[0], (*items)[1]);
    }
    return dict;
  }

  void set_items(Dict& dict, const std::vector<Ref>& flat) {
    if (flat.size() % 2 != 0) bad("SETITEMS with an odd number of items");
    for (size_t i = 0; i < flat.size(); i += 2) dict.items.emplace_back(flat[i], flat[i + 1]);
  }

  void step(uint8_t op);
  bool step_scalar(uint8_t op);
  bool step_text(uint8_t op);
  bool step_container(uint8_t op);
  bool step_memo(uint8_t op);
  bool step_object(uint8_t op);
  Ref construct(const Ref& type, const Ref& args);
  void build(Ref& target, const Ref& state);
  Ref call(const Ref& callable, const Ref& args, int depth = 0);
  Ref rebuild_tensor(const std::vector<Ref>& args, std::optional<std::string> dtype_name);
  Ref persistent(const Ref& pid);
  std::optional<Storage> storage_id(const Ref& id);
  Ref import_global(std::string module, std::string name, uint64_t at);
  void mark_called(const Ref& value);
  Ref stack_global(const Ref& module, const Ref& name, uint64_t at);

  ByteCursor cursor_;
  const PersistentResolver& resolve_;
  PickleLog* log_;
  std::optional<uint64_t> frame_end_;  ///< the offset the current FRAME ends at, while one is open
  std::unordered_map<std::string, size_t> import_index_;
  std::vector<Ref> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Ref> memo_;
  std::set<std::string> not_called_;
  std::map<std::string, Storage> storages_;
  std::vector<Ref> tensors_;
  std::shared_ptr<Arena> arena_ = std::make_shared<Arena>();
};

int64_t signed_le(std::string_view raw) {  // LONG1/LONG4: little-endian two's complement
  uint64_t value = 0;
  for (size_t i = 0; i < raw.size(); ++i) value |= static_cast<uint64_t>(static_cast<uint8_t>(raw[i])) << (8 * i);
  if (!raw.empty() && raw.size() < 8 && (static_cast<uint8_t>(raw.back()) & 0x80)) value |= ~0ull << (8 * raw.size());
  return static_cast<int64_t>(value);
}

/// Protocol 0's quoted STRING: 'text' or "text", with Python escapes we only need to keep, not decode.
std::string unquote(std::string text) {
  if (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') && text.back() == text.front())
    return text.substr(1, text.size() - 2);
  return text;
}

// Each step_* handles one family of opcodes and returns false for an opcode that is not its own.
bool Machine::step_scalar(uint8_t op) {
  switch (op) {
    case 'N':
      push(make(None{}));
      return true;
    case 0x88:
      push(make(true));
      return true;  // NEWTRUE
    case 0x89:
      push(make(false));
      return true;  // NEWFALSE
    case 'I': {     // INT, text; "01"/"00" are protocol 0 booleans
      std::string text = line();
      if (text == "01" || text == "00")
        push(make(text == "01"));
      else
        push(make(static_cast<int64_t>(std::strtoll(text.c_str(), nullptr, 10))));
      return true;
    }
    case 'L':
      push(make(static_cast<int64_t>(std::strtoll(line().c_str(), nullptr, 10))));
      return true;  // LONG
    case 'J':
      push(make(static_cast<int64_t>(static_cast<int32_t>(le(4)))));
      return true;  // BININT
    case 'K':
      push(make(static_cast<int64_t>(le(1))));
      return true;  // BININT1
    case 'M':
      push(make(static_cast<int64_t>(le(2))));
      return true;  // BININT2
    case 0x8a:
    case 0x8b: {  // LONG1, LONG4
      auto raw = take(le(op == 0x8a ? 1 : 4));
      push(raw.size() <= 8 ? make(signed_le(raw)) : make(Bytes{std::string(raw)}));  // huge ints stay opaque
      return true;
    }
    case 'G': {  // BINFLOAT: big-endian
      auto raw = take(8);
      uint64_t bits = 0;
      for (char c : raw) bits = (bits << 8) | static_cast<uint8_t>(c);
      push(make(std::bit_cast<double>(bits)));
      return true;
    }
    case 'F':
      push(make(std::strtod(line().c_str(), nullptr)));
      return true;  // FLOAT, text
    default:
      return false;
  }
}

bool Machine::step_text(uint8_t op) {
  switch (op) {
    case 'X':
      push(make(std::string(take(le(4)))));
      return true;  // BINUNICODE
    case 0x8c:
      push(make(std::string(take(le(1)))));
      return true;  // SHORT_BINUNICODE
    case 0x8d:
      push(make(std::string(take(le(8)))));
      return true;  // BINUNICODE8
    case 'V':
      push(make(line()));
      return true;  // UNICODE, raw-unicode-escape
    case 'T':
      push(make(std::string(take(le(4)))));
      return true;  // BINSTRING
    case 'U':
      push(make(std::string(take(le(1)))));
      return true;  // SHORT_BINSTRING
    case 'S':
      push(make(unquote(line())));
      return true;  // STRING, quoted
    case 'B':
      push(make(Bytes{std::string(take(le(4)))}));
      return true;  // BINBYTES
    case 'C':
      push(make(Bytes{std::string(take(le(1)))}));
      return true;  // SHORT_BINBYTES
    case 0x8e:
    case 0x96:
      push(make(Bytes{std::string(take(le(8)))}));
      return true;  // BINBYTES8, BYTEARRAY8
    default:
      return false;
  }
}

bool Machine::step_container(uint8_t op) {
  switch (op) {
    case ')':
      push(make(Tuple{}));
      return true;
    case 't':
      push(make(Tuple{pop_mark()}));
      return true;
    case 0x85: {
      Ref a = pop();
      push(make(Tuple{{a}}));
      return true;
    }
    case 0x86: {
      Ref b = pop(), a = pop();
      push(make(Tuple{{a, b}}));
      return true;
    }
    case 0x87: {
      Ref c = pop(), b = pop(), a = pop();
      push(make(Tuple{{a, b, c}}));
      return true;
    }
    case ']':
    case 0x8f:
      push(make(List{}));
      return true;  // EMPTY_LIST, EMPTY_SET (a set is a list to us)
    case 'l':
    case 0x91:
      push(make(List{pop_mark()}));
      return true;  // LIST, FROZENSET
    case 'a': {
      Ref item = pop();
      list_target(top()).items.push_back(item);
      return true;
    }
    case 'e':
    case 0x90: {  // APPENDS, ADDITEMS
      auto items = pop_mark();
      auto& list = list_target(top()).items;
      list.insert(list.end(), items.begin(), items.end());
      return true;
    }
    case '}':
      push(make(Dict{}));
      return true;
    case 'd': {
      Dict dict;
      set_items(dict, pop_mark());
      push(make(std::move(dict)));
      return true;
    }
    case 's': {
      Ref value = pop(), key = pop();
      dict_target(top()).items.emplace_back(key, value);
      return true;
    }
    case 'u': {
      auto items = pop_mark();
      set_items(dict_target(top()), items);
      return true;
    }
    default:
      return false;
  }
}

bool Machine::step_memo(uint8_t op) {
  switch (op) {
    case 'p':
      memo_put(std::strtoull(line().c_str(), nullptr, 10));
      return true;  // PUT
    case 'q':
      memo_put(le(1));
      return true;  // BINPUT
    case 'r':
      memo_put(le(4));
      return true;  // LONG_BINPUT
    case 0x94:
      memo_put(memo_.size());
      return true;  // MEMOIZE
    case 'g':
      push(memo_get(std::strtoull(line().c_str(), nullptr, 10)));
      return true;  // GET
    case 'h':
      push(memo_get(le(1)));
      return true;  // BINGET
    case 'j':
      push(memo_get(le(4)));
      return true;  // LONG_BINGET
    default:
      return false;
  }
}

bool Machine::step_object(uint8_t op) {
  switch (op) {
    case 'c': {  // GLOBAL "module\nname\n"
      uint64_t at = cursor_.offset() - 1;
      std::string module = line();
      push(import_global(std::move(module), line(), at));
      return true;
    }
    case 0x93: {  // STACK_GLOBAL
      Ref name = pop(), module = pop();
      push(stack_global(module, name, cursor_.offset() - 1));
      return true;
    }
    case 'R': {
      Ref args = pop(), callable = pop();
      push(call(callable, args));
      return true;
    }  // REDUCE
    case 0x81: {
      Ref args = pop(), type = pop();
      push(construct(type, args));
      return true;
    }  // NEWOBJ
    case 0x92: {
      pop();
      Ref args = pop(), type = pop();
      push(construct(type, args));
      return true;
    }            // NEWOBJ_EX
    case 'o': {  // OBJ: MARK type args... OBJ
      auto items = pop_mark();
      if (items.empty()) bad("OBJ without a class");
      push(construct(items.front(), make(Tuple{{items.begin() + 1, items.end()}})));
      return true;
    }
    case 'i': {  // INST "module\nname\n": MARK args... INST
      uint64_t at = cursor_.offset() - 1;
      std::string module = line();
      Ref type = import_global(std::move(module), line(), at);
      push(construct(type, make(Tuple{pop_mark()})));
      return true;
    }
    case 'b': {
      Ref state = pop();
      build(top(), state);
      return true;
    }  // BUILD
    case 'Q':
      push(persistent(pop()));
      return true;  // BINPERSID
    case 'P':
      push(persistent(make(line())));
      return true;  // PERSID
    default:
      return false;
  }
}

void Machine::step(uint8_t op) {
  switch (op) {
    case 0x80:
      byte();
      return;  // PROTO
    case 0x95:
      enter_frame();
      return;  // FRAME
    case '(':  // MARK
      if (marks_.size() >= kMaxMarks) bad("MARK nesting limit exceeded");
      marks_.push_back(stack_.size());
      return;
    case '0':
      pop();
      return;  // POP
    case '1':
      pop_mark();
      return;  // POP_MARK
    case '2':
      push(top());
      return;  // DUP
    default:
      break;
  }
  if (!step_scalar(op) && !step_text(op) && !step_container(op) && !step_memo(op) && !step_object(op))
    bad(fmt::format("unknown or unsupported opcode 0x{:02x}", op));
}

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
  return make(Opaque{name, args, nullptr});
}

/// BUILD sets an object's state. Opaque objects keep it (it holds a module's parameters); dicts and tensors
/// ignore it (torch puts state_dict._metadata there).
void Machine::build(Ref& target, const Ref& state) {
  mark_called(target);
  if (const auto* global = std::get_if<Global>(&target->v))  // a known way to smuggle names in (docs/security.md)
    tampered(TamperingKind::kStateOnCode, cursor_.offset() - 1, fmt::format("BUILD on {}", global->qualified()));
  if (auto* object = std::get_if<Opaque>(&target->v)) object->state = state;
}

Ref Machine::call(const Ref& callable, const Ref& args, int depth) {
  if (depth > kMaxCallDepth) bad("nested rebuild calls too deep");
  mark_called(callable);
  const auto* global = std::get_if<Global>(&callable->v);
  const auto* tuple = std::get_if<Tuple>(&args->v);
  std::string name = global ? global->qualified() : "?";
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
    if (name == "torch._tensor._rebuild_from_type_v2" && items.size() >= 3) return call(items[0], items[2], depth + 1);
  }
  not_called_.insert(name);
  return make(Opaque{global ? *global : Global{"?", "?"}, args, nullptr});
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
  return make(Opaque{Global{"persistent", "id"}, pid, nullptr});
}

}  // namespace

std::optional<DType> storage_dtype(std::string_view storage_type) { return lookup(kStorageTypes, storage_type); }

Result run(std::span<const std::byte> bytes, const std::filesystem::path& path, uint64_t base,
           const PersistentResolver& resolve, PickleLog* log) {
  return Machine(bytes, path, base, resolve, log).run();
}

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
