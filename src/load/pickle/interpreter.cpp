#include <fmt/format.h>

#include "precdetect/load/pickle/machine.h"

namespace precdetect::pickle {
namespace {

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

}  // namespace

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
    case '0':  // POP: a value, or the MARK on top of the stack (as CPython's unpicklers do)
      if (!marks_.empty() && stack_.size() == marks_.back())
        marks_.pop_back();
      else
        pop();
      return;
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

Result run(std::span<const std::byte> bytes, const std::filesystem::path& path, uint64_t base,
           const PersistentResolver& resolve, PickleLog* log) {
  return Machine(bytes, path, base, resolve, log).run();
}

}  // namespace precdetect::pickle
