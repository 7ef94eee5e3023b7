#pragma once
/// The restricted pickle machine's state and its parts, shared by the files that implement it: the opcode
/// interpreter (interpreter.cpp) and the object graph it builds (graph.cpp). Internal to load/pickle/: everything
/// else runs a pickle through pickle.h's run().

#include <fmt/format.h>

#include <map>
#include <set>
#include <unordered_map>

#include "precdetect/core/byte_cursor.h"
#include "precdetect/core/bytes.h"
#include "precdetect/core/error.h"
#include "precdetect/load/pickle/pickle.h"

namespace precdetect::pickle {

// Limits far above any real checkpoint and far below what would exhaust memory.
constexpr size_t kMaxStack = 1 << 22;
constexpr size_t kMaxMemo = 1 << 24;
constexpr size_t kMaxMarks = 1 << 12;
constexpr int kMaxCallDepth = 64;
constexpr size_t kMaxImports = 1 << 12;  // distinct globals; real checkpoints import a few dozen

/// An array joblib.dump wrote into the stream right after the BUILD of its NumpyArrayWrapper (joblib's
/// numpy_pickle.py: NumpyArrayWrapper.write_array), which joblib.load's unpickler reads before the next opcode.
struct InlineArray {
  bool objects = false;  ///< an object array: a pickle of its own follows (joblib unpickles it), not raw bytes
  bool aligned = false;  ///< a padding length byte and that many bytes come first (joblib >= 1.2's alignment)
  uint64_t bytes = 0;    ///< the raw array's bytes
};

class Machine {
 public:
  /// `inline_arrays`: the stream is read as joblib.load reads it, arrays inline after their wrappers (a pickle an
  /// object array's wrapper is followed by is read by a plain unpickler, which reads none).
  Machine(std::span<const std::byte> bytes, const std::filesystem::path& path, uint64_t base,
          const PersistentResolver& resolve, PickleLog* log, bool inline_arrays = true)
      : cursor_(bytes, path, ErrorCode::kInvalidPickle, "pickle", base),
        path_(path),
        resolve_(resolve),
        log_(log),
        reads_inline_arrays_(inline_arrays) {}

  Result run() {
    while (true) {
      cursor_.mark();  // errors name the opcode being read
      uint64_t at = cursor_.offset();
      uint8_t op = byte();
      if (op != '.') step(op);  // STOP
      leave_frame(at);
      // joblib reads an array from the file itself, past the frame its unpickler holds: once no frame is open.
      if (!inline_arrays_.empty() && (!frame_end_ || op == '.')) read_inline_arrays();
      if (op == '.') break;
    }
    // STOP returns the top of the stack, above the last MARK; what lies below is left, as CPython leaves it.
    Ref root = pop();
    stack_.push_back(root);  // held as the root while the graph is checked
    note_getattr_held_as_data();
    return {
        root,  cursor_.offset(), cursor_.position(), std::move(not_called_), std::move(storages_), std::move(tensors_),
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

  void note_inline_array(const Opaque& wrapper);
  void read_inline_arrays();
  void step(uint8_t op);
  bool step_scalar(uint8_t op);
  bool step_text(uint8_t op);
  bool step_container(uint8_t op);
  bool step_memo(uint8_t op);
  bool step_object(uint8_t op);
  Ref construct(const Ref& type, const Ref& args);
  void build(Ref& target, const Ref& state);
  void keep_subclass_state(const Ref& rebuilt, const Ref& state);
  Ref call(const Ref& callable, const Ref& args, int depth = 0);
  std::optional<Ref> method_reference(const Global& getattr, const Tuple& args);
  void note_getattr_held_as_data();
  Ref rebuild_tensor(const std::vector<Ref>& args, std::optional<std::string> dtype_name);
  Ref persistent(const Ref& pid);
  std::optional<Storage> storage_id(const Ref& id);
  Ref import_global(std::string module, std::string name, uint64_t at);
  void mark_called(const Ref& value);
  Ref stack_global(const Ref& module, const Ref& name, uint64_t at);

  ByteCursor cursor_;
  const std::filesystem::path& path_;
  const PersistentResolver& resolve_;
  PickleLog* log_;
  bool reads_inline_arrays_;
  std::vector<InlineArray> inline_arrays_;  ///< noted by the BUILD of a joblib NumpyArrayWrapper, read after it
  std::optional<uint64_t> frame_end_;       ///< the offset the current FRAME ends at, while one is open
  std::unordered_map<std::string, size_t> import_index_;
  std::vector<Ref> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Ref> memo_;
  std::set<std::string> not_called_;
  std::map<std::string, Storage> storages_;
  std::vector<Ref> tensors_;
  std::shared_ptr<Arena> arena_ = std::make_shared<Arena>();
};

}  // namespace precdetect::pickle
