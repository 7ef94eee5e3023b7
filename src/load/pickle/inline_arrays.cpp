#include <cctype>

#include "precdetect/load/pickle/machine.h"

namespace precdetect::pickle {
namespace {

/// `key`'s value in a state dict, or nullptr.
const Ref* state_item(const Dict& state, std::string_view key) {
  for (const auto& [name, value] : state.items)
    if (const auto* text = std::get_if<std::string>(&name->v); text && *text == key) return &value;
  return nullptr;
}

}  // namespace

/// A NumpyArrayWrapper's state (joblib/numpy_pickle.py): `shape`, `dtype` (numpy.dtype(type, False, True) and its
/// state tuple (version, byte order, subarray, names, fields, element size, alignment, flags)) and, since joblib
/// 1.2, `numpy_array_alignment_bytes`. The array's bytes follow the BUILD: its element count times the element size
/// (the state's, for the flexible types, else the type's digits: `f4`, `c16`, `O8`); an object array (the dtype's
/// NPY_ITEM_HASOBJECT flag) is a pickle of its own instead.
void Machine::note_inline_array(const Opaque& wrapper) {
  const auto* state = wrapper.state ? std::get_if<Dict>(&wrapper.state->v) : nullptr;
  const Ref* shape = state ? state_item(*state, "shape") : nullptr;
  const Ref* dtype = state ? state_item(*state, "dtype") : nullptr;
  const auto* type = dtype ? std::get_if<Opaque>(&(*dtype)->v) : nullptr;
  if (!shape || !type || type->type.qualified() != "numpy.dtype" || !type->args || !type->state)
    bad("a joblib NumpyArrayWrapper without the shape and dtype of the array that follows it");
  const auto& args = as<Tuple>(type->args, "joblib array dtype").items;
  const auto& dtype_state = as<Tuple>(type->state, "joblib array dtype state").items;
  if (args.empty() || dtype_state.size() < 8) bad("a joblib array's dtype that numpy does not write");
  const std::string& name = as<std::string>(args[0], "joblib array dtype");
  int64_t element_size = as<int64_t>(dtype_state[5], "joblib array element size");
  int64_t flags = as<int64_t>(dtype_state[7], "joblib array dtype flags");
  if (element_size <= 0) {
    size_t digits = name.find_first_of("0123456789");
    if (digits == std::string::npos || name.size() - digits > 3) bad(fmt::format("joblib array dtype `{}`", name));
    element_size = std::stoll(name.substr(digits));
  }
  uint64_t count = 1;
  for (const Ref& dim : as<Tuple>(*shape, "joblib array shape").items) {
    int64_t extent = as<int64_t>(dim, "joblib array shape");
    auto product = checked_mul(count, static_cast<uint64_t>(extent));
    if (extent < 0 || !product) bad("a joblib array's element count overflows");
    count = *product;
  }
  auto bytes = checked_mul(count, static_cast<uint64_t>(element_size));
  if (!bytes) bad("a joblib array's size overflows");
  const Ref* alignment = state_item(*state, "numpy_array_alignment_bytes");
  inline_arrays_.push_back({.objects = (flags & 1) != 0,
                            .aligned = alignment && !std::holds_alternative<None>((*alignment)->v),
                            .bytes = *bytes});
}

/// Moves past the arrays joblib wrote after their wrappers, in order: each one's padding and raw bytes, or, for an
/// object array, the pickle it is (read to its STOP by the plain unpickler joblib hands it to: its imports are this
/// file's too). joblib reads them from the file itself, so an array whose wrapper's BUILD lay inside a FRAME is
/// read past that frame's end, where the machine is now.
void Machine::read_inline_arrays() {
  std::vector<InlineArray> arrays = std::move(inline_arrays_);
  inline_arrays_.clear();
  for (const InlineArray& array : arrays) {
    if (array.objects) {
      Result inner = Machine(cursor_.rest(), path_, cursor_.offset(), resolve_, log_, /*inline_arrays=*/false).run();
      cursor_.skip(inner.size);
      continue;
    }
    if (array.aligned) cursor_.skip(byte());
    cursor_.skip(array.bytes);
  }
}

}  // namespace precdetect::pickle
