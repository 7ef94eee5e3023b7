#include "precdetect/load/torch/torch_tensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "precdetect/core/bytes.h"
#include "precdetect/core/error.h"
#include "precdetect/load/records/find_records.h"
#include "precdetect/load/tensor_subclasses.h"

namespace precdetect {
namespace {

using namespace pickle;

constexpr int kMaxObjectDepth = 256;
// A container reached by two paths (a module tied in two places) is walked once per path, as a state_dict names
// it. Each reference costs a pickle at least one opcode byte, so a graph without such sharing takes fewer steps
// than its pickle has bytes; references to references (DUP, DUP, TUPLE3, repeated) reach 3^n paths from 3n bytes.
// A container found to hold no tensor is passed over on every later path (a pickled model's layers sharing one
// config's lists), so only paths that lead to tensors, which a state_dict would name, can run out of steps.
constexpr uint64_t kStepsPerPickleByte = 16;
constexpr uint64_t kMinSteps = 1 << 12;
constexpr uint64_t kMaxSteps = 1 << 26;
constexpr std::string_view kStateDictWrappers[] = {"state_dict", "model_state_dict", "model", "module",
                                                   "net",        "network"};
// nn.Module keeps parameters, buffers and submodules in these dicts; a state_dict names them without them.
constexpr std::string_view kModuleSlots[] = {"_parameters", "_buffers", "_modules"};

/// nn.Module's pickled __dict__ holds its parameters, buffers and submodules in these dicts, which a
/// state_dict's names leave out.
bool is_module_state(const Dict& dict) {
  for (const auto& [key, item] : dict.items)
    if (key_text(key) == "_parameters") return true;
  return false;
}

/// The role of what a module's attribute `slot` holds: `_parameters` and submodules keep the role they came in
/// with; everything else the module holds (`_buffers`, tensors kept as plain attributes or in lists, like
/// YOLOv5's anchor grids) is not a parameter, as model.parameters() would not yield it.
TensorRole module_slot_role(std::string_view slot, TensorRole role) {
  if (role == TensorRole::kOptimizer || slot == "_parameters" || slot == "_modules") return role;
  return TensorRole::kBuffer;
}

/// Dicts, lists, tuples and pickled objects: the values that tensors can lie below.
bool is_container(const Value& value) {
  return std::holds_alternative<Dict>(value.v) || std::holds_alternative<List>(value.v) ||
         std::holds_alternative<Tuple>(value.v) || std::holds_alternative<Opaque>(value.v);
}

/// What the path so far says of the tensors below it.
struct Context {
  TensorRole role = TensorRole::kModel;
  bool role_from_file = false;  ///< below a pickled nn.Module, which says parameter or buffer itself
};

/// An object torch's _rebuild_wrapper_subclass rebuilt as one of torchao's classes, with the state an unpickler sets
/// on it (Machine::keep_subclass_state): a tensor subclass whose attributes hold its inner tensors. Another library's
/// subclass (DTensor, ...) is walked as any object, its tensors named by their attribute (`X.weight._local_tensor`).
bool is_torchao_subclass(const Opaque& object) {
  if (object.type.qualified() != "torch._utils._rebuild_wrapper_subclass" || !object.state || !object.args)
    return false;
  const auto* args = std::get_if<Tuple>(&object.args->v);
  const Global* type = args && !args->items.empty() ? std::get_if<Global>(&args->items[0]->v) : nullptr;
  return type && (type->module == "torchao" || type->module.starts_with("torchao.")) &&
         std::holds_alternative<Dict>(object.state->v);
}

/// A subclass's attribute as torchao's TensorSubclassAttributeJSONEncoder writes it: numbers, strings, booleans,
/// None and lists of them as themselves, a torch dtype as {"_type": "torch.dtype", "_data": "bfloat16"}; nullopt for
/// anything else (a config object: what dequantizing needs is never there).
std::optional<nlohmann::json> attribute_json(const Ref& value) {
  return std::visit(
      [](const auto& item) -> std::optional<nlohmann::json> {
        using Item = std::decay_t<decltype(item)>;
        if constexpr (std::is_same_v<Item, None>) return nlohmann::json(nullptr);
        if constexpr (std::is_same_v<Item, bool> || std::is_same_v<Item, int64_t> || std::is_same_v<Item, double> ||
                      std::is_same_v<Item, std::string>)
          return nlohmann::json(item);
        if constexpr (std::is_same_v<Item, Global>) {
          if (item.module != "torch") return std::nullopt;
          return nlohmann::json{{"_type", "torch.dtype"}, {"_data", item.name}};
        }
        if constexpr (std::is_same_v<Item, List> || std::is_same_v<Item, Tuple>) {
          nlohmann::json items = nlohmann::json::array();
          for (const Ref& part : item.items) {
            std::optional<nlohmann::json> converted = attribute_json(part);
            if (!converted) return std::nullopt;
            items.push_back(std::move(*converted));
          }
          return items;
        }
        return std::nullopt;
      },
      value->v);
}

class Walker {
 public:
  Walker(const std::filesystem::path& path, uint64_t pickle_size)
      : path_(path), max_steps_(std::min(kMaxSteps, kMinSteps + kStepsPerPickleByte * pickle_size)) {}
  std::vector<FoundTensor> found;

  void walk(const Ref& value, const std::string& name, Context context, int depth) {
    if (depth > kMaxObjectDepth) fail(ErrorCode::kInvalidPickle, path_, "object graph nests too deeply");
    if (++steps_ > max_steps_)
      fail(ErrorCode::kInvalidPickle, path_,
           fmt::format("object graph reaches more than {} objects through shared references", max_steps_));
    if (const auto* tensor = std::get_if<Tensor>(&value->v))  // a tensor saved on its own has no path: "(root)"
      return found.push_back({name.empty() ? "(root)" : name, tensor, context.role, context.role_from_file});
    if (!is_container(*value) || without_tensors_.count(value.get())) return;
    if (!on_path_.insert(value.get()).second) {  // a container that contains itself
      ++cycles_;
      return;
    }
    size_t found_before = found.size();
    uint64_t cycles_before = cycles_;
    if (const auto* dict = std::get_if<Dict>(&value->v)) {
      bool module = is_module_state(*dict);
      for (const auto& [key, item] : dict->items) {
        std::string part = key_text(key);
        bool slot = std::find(std::begin(kModuleSlots), std::end(kModuleSlots), part) != std::end(kModuleSlots);
        Context inner = module ? Context{module_slot_role(part, context.role), true} : context;
        walk(item, slot ? name : join_key(name, part), inner, depth + 1);
      }
    } else if (const auto* list = std::get_if<List>(&value->v)) {
      walk_items(list->items, name, context, depth);
    } else if (const auto* tuple = std::get_if<Tuple>(&value->v)) {
      walk_items(tuple->items, name, context, depth);
    } else if (const auto* object = std::get_if<Opaque>(&value->v); object && is_torchao_subclass(*object)) {
      walk_subclass(*object, name, context);
    } else if (object != nullptr) {
      // A pickled object's tensors live in its BUILD state (a module's __dict__; the parts of a (dict, slots)
      // state are not names) and in the items set on it (a defaultdict's entries).
      if (const auto* parts = object->state ? std::get_if<Tuple>(&object->state->v) : nullptr)
        for (const Ref& part : parts->items) walk(part, name, context, depth + 1);
      else if (object->state)
        walk(object->state, name, context, depth + 1);
      if (object->contents) walk(object->contents, name, context, depth + 1);
    }
    on_path_.erase(value.get());
    // Below a cycle, a tensor may hang off a container still on the path: only a closed subgraph is known empty.
    if (found.size() == found_before && cycles_ == cycles_before) without_tensors_.insert(value.get());
  }

 private:
  /// A torchao subclass's inner tensors (its state's tensor attributes), named as torchao flattens them, each with
  /// the subclass's description: its class, its other attributes, its tensors' names.
  void walk_subclass(const Opaque& object, const std::string& name, Context context) {
    const auto& state = std::get<Dict>(object.state->v);
    nlohmann::json data = nlohmann::json::object(), parts = nlohmann::json::array();
    for (const auto& [key, item] : state.items) {
      if (std::holds_alternative<Tensor>(item->v))
        parts.push_back(key_text(key));
      else if (std::optional<nlohmann::json> attribute = attribute_json(item))
        data[key_text(key)] = std::move(*attribute);
    }
    // _rebuild_wrapper_subclass(cls, dtype, size, ...): the dtype the subclass presents, which its dequantize
    // returns (torchao's `self.dtype`), is the wrapper's, not an attribute of its state.
    const auto& args = std::get<Tuple>(object.args->v).items;
    if (args.size() > 1 && !data.contains("dtype"))
      if (std::optional<nlohmann::json> dtype = attribute_json(args[1])) data["dtype"] = std::move(*dtype);
    const std::string type = std::get<Global>(args[0]->v).name;
    // A pickle's strings need not be UTF-8 (the fuzzer's find): JSON gets U+FFFD in their place, never an exception.
    const std::string description =
        nlohmann::json{{"_type", type}, {"_data", data}, {"_tensor_data_names", parts}}.dump(
            -1, ' ', false, nlohmann::json::error_handler_t::replace);
    for (const auto& [key, item] : state.items)
      if (const auto* tensor = std::get_if<Tensor>(&item->v))
        found.push_back({.name = subclass_part_name(name, key_text(key)),
                         .tensor = tensor,
                         .role = context.role,
                         .role_from_file = context.role_from_file,
                         .subclass_of = name,
                         .subclass = description});
  }
  void walk_items(const std::vector<Ref>& items, const std::string& name, Context context, int depth) {
    for (size_t i = 0; i < items.size(); ++i) walk(items[i], join_key(name, std::to_string(i)), context, depth + 1);
  }
  const std::filesystem::path& path_;
  const uint64_t max_steps_;
  uint64_t steps_ = 0;
  uint64_t cycles_ = 0;  ///< containers met again while on the path
  std::set<const Value*> on_path_;
  std::set<const Value*> without_tensors_;  ///< containers walked whole that hold no tensor
};

/// Row-major strides: a view with these needs no stride to be read.
bool is_row_major(const std::vector<int64_t>& size, const std::vector<int64_t>& stride) {
  int64_t expected = 1;
  for (size_t i = size.size(); i-- > 0;) {
    if (size[i] != 1 && stride[i] != expected) return false;
    expected *= size[i];
  }
  return true;
}

/// Checks the view against its storage and fills shape, stride, numel and byte counts.
TensorRecord make_record(const FoundTensor& found, DType dtype, const StorageLocation& storage,
                         const std::filesystem::path& path) {
  const Tensor& tensor = *found.tensor;
  TensorRecord record{.name = found.name,
                      .dtype = dtype,
                      .shape = tensor.size,
                      .offset = storage.offset,
                      .storage_nbytes = storage.nbytes,
                      .storage_offset = tensor.storage_offset,
                      .role = found.role,
                      .role_from_file = found.role_from_file};
  uint64_t element_size = static_cast<uint64_t>(dtype_bits(dtype) / 8);
  std::optional<uint64_t> numel = 1, last = tensor.storage_offset;
  for (size_t i = 0; i < tensor.size.size(); ++i) {
    if (tensor.size[i] < 0 || tensor.stride[i] < 0)
      fail(ErrorCode::kInvalidPickle, path, fmt::format("tensor `{}` has a negative size or stride", found.name));
    auto extent = static_cast<uint64_t>(tensor.size[i]);
    numel = numel ? checked_mul(*numel, extent) : std::nullopt;
    if (extent > 0 && last) last = checked_add(*last, (extent - 1) * static_cast<uint64_t>(tensor.stride[i]));
  }
  if (!numel || !last || !checked_mul(*numel, element_size))
    fail(ErrorCode::kValidationOverflow, path, fmt::format("tensor `{}`: size overflows", found.name));
  record.numel = *numel;
  record.nbytes = *numel * element_size;
  auto needed = checked_mul(*last + 1, element_size);
  if (*numel > 0 && (!needed || *needed > storage.nbytes))
    fail(ErrorCode::kStorageTooSmall, path,
         fmt::format("tensor `{}` reads up to element {} but its storage holds {} bytes", found.name, *last,
                     storage.nbytes));
  if (!is_row_major(tensor.size, tensor.stride)) record.stride = tensor.stride;
  return record;
}

}  // namespace

bool names_optimizer(const std::string& key) {
  std::string lower = key;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("optim") != std::string::npos;
}

std::vector<FoundTensor> find_tensors(const pickle::Result& pickle, const std::filesystem::path& path) {
  Walker walker(path, pickle.size);
  const auto* dict = std::get_if<Dict>(&pickle.root->v);
  if (dict == nullptr) {
    walker.walk(pickle.root, "", Context{}, 0);
  } else {
    std::string wrapper;
    for (std::string_view candidate : kStateDictWrappers)
      for (const auto& [key, item] : dict->items)
        if (wrapper.empty() && key_text(key) == candidate) wrapper = candidate;
    for (const auto& [key, item] : dict->items) {
      std::string name = key_text(key);
      walker.walk(item, name == wrapper ? "" : name,
                  Context{names_optimizer(name) ? TensorRole::kOptimizer : TensorRole::kModel}, 1);
    }
  }
  // The safety net: a tensor the pickle rebuilt where no path leads (an argument of a call we did not make, the
  // state of a dict) is still reported, under a name that stays the same from run to run.
  std::set<const Tensor*> reached;
  for (const FoundTensor& item : walker.found) reached.insert(item.tensor);
  for (size_t i = 0; i < pickle.tensors.size(); ++i) {
    const auto& tensor = std::get<Tensor>(pickle.tensors[i]->v);
    if (!reached.count(&tensor))
      walker.found.push_back({.name = fmt::format("(unreached).{}", i), .tensor = &tensor, .reached = false});
  }
  return std::move(walker.found);
}

void add_torch_tensors(Checkpoint& checkpoint, const std::vector<FoundTensor>& found, const LocateStorage& locate,
                       size_t file, bool big_endian) {
  const auto& path = checkpoint.files[file]->path();
  std::map<std::string, std::string> first_on_storage;
  std::map<std::tuple<std::string, uint64_t, std::vector<int64_t>, std::vector<int64_t>>, std::string> first_view;
  std::vector<std::string> skipped, unreached;
  for (const FoundTensor& item : found) {
    if (!item.reached) unreached.push_back(item.name);
    if (!item.subclass_of.empty()) checkpoint.tensor_subclasses.emplace(item.subclass_of, item.subclass);
    const Tensor& tensor = *item.tensor;
    if (!tensor.dtype || dtype_bits(*tensor.dtype) % 8 != 0) {
      skipped.push_back(fmt::format("{} ({})", item.name, tensor.dtype_name));
      continue;
    }
    TensorRecord record = make_record(item, *tensor.dtype, locate(tensor.storage), path);
    record.file = file;
    record.big_endian = big_endian;
    auto [storage, fresh_storage] = first_on_storage.emplace(tensor.storage.key, item.name);
    if (!fresh_storage) record.shares_storage_with = storage->second;
    auto [view, fresh_view] = first_view.emplace(
        std::tuple(tensor.storage.key, tensor.storage_offset, tensor.size, tensor.stride), item.name);
    record.counted = fresh_view;
    checkpoint.tensors.push_back(std::move(record));
  }
  warn_about(checkpoint.warnings, WarningCode::kDtypesNotRead, path.string(), std::move(skipped));
  warn_about(checkpoint.warnings, WarningCode::kUnreachedTensors, path.string(), std::move(unreached));
}

void add_pickle_findings(Checkpoint& checkpoint, const pickle::Result& pickle, const std::filesystem::path& path) {
  const std::set<std::string>& globals = pickle.not_called;
  warn_about(checkpoint.warnings, WarningCode::kNotExecuted, path.string(), {globals.begin(), globals.end()});
  FoundRecords found = find_training_records(pickle, path);
  for (TrainingRecord& record : found.records) merge_record(checkpoint.records, std::move(record));
  checkpoint.warnings.insert(checkpoint.warnings.end(), found.warnings.begin(), found.warnings.end());
}

}  // namespace precdetect
