#include "precdetect/load/records/find_records.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace precdetect {
namespace {

using namespace pickle;

constexpr int kMaxDepth = 64;

// Boolean run flags and the precision each turns on: fairseq, Megatron-LM and the HF Trainer (fp16, bf16,
// memory_efficient_*), timm before 2022-10 (native_amp, apex_amp). timm's and fairseq's `amp` is read apart.
constexpr std::pair<std::string_view, Label> kBoolFlags[] = {
    {"fp16", Label::kFp16},       {"memory_efficient_fp16", Label::kFp16},
    {"native_amp", Label::kFp16}, {"apex_amp", Label::kFp16},
    {"bf16", Label::kBf16},       {"memory_efficient_bf16", Label::kBf16}};
// Fields that name a precision: transformers 5's mixed_precision ("no", "fp16", "bf16"), Megatron-LM's
// params_dtype (torch.float16, ...), timm's model_dtype, a `precision` string (Lightning's, OpenCLIP's).
constexpr std::string_view kNamedPrecisions[] = {"mixed_precision", "params_dtype", "model_dtype", "precision"};
// torch.amp.GradScaler.state_dict() (torch/amp/grad_scaler.py); {} when the scaler is disabled.
constexpr std::string_view kGradScalerKeys[] = {"scale", "growth_factor", "backoff_factor", "growth_interval",
                                                "_growth_tracker"};

/// The dict behind a value: itself, or an object's BUILD state or set items (a Namespace's attributes, an
/// AttributeDict's entries).
const Dict* dict_of(const Ref& value) {
  if (!value) return nullptr;
  if (const auto* dict = std::get_if<Dict>(&value->v)) return dict;
  const auto* object = std::get_if<Opaque>(&value->v);
  if (object == nullptr) return nullptr;
  // One level only: a state may be another object, or itself (a hostile pickle's cycle).
  if (const Ref& state = object->state) {
    if (const auto* dict = std::get_if<Dict>(&state->v)) return dict;
    if (const auto* parts = std::get_if<Tuple>(&state->v); parts && !parts->items.empty())  // (dict, slots)
      if (const auto* dict = std::get_if<Dict>(&parts->items.front()->v)) return dict;
  }
  return object->contents ? std::get_if<Dict>(&object->contents->v) : nullptr;
}

const Ref* field(const Dict* dict, std::string_view key) {
  if (dict == nullptr) return nullptr;
  for (const auto& [name, item] : dict->items)
    if (key_text(name) == key) return &item;
  return nullptr;
}

/// A float as Python's repr writes it: 65536.0, 0.5, 1e-05.
std::string python_float(double value) {
  if (std::isfinite(value) && value == std::trunc(value) && std::fabs(value) < 1e16)
    return fmt::format("{:.1f}", value);
  return fmt::format("{}", value);
}

/// A value as Python prints it: True, 128, 65536.0, 'bf16', torch.bfloat16, None.
std::string python_text(const Ref& value) {
  const auto& v = value->v;
  if (std::holds_alternative<None>(v)) return "None";
  if (const auto* flag = std::get_if<bool>(&v)) return *flag ? "True" : "False";
  if (const auto* number = std::get_if<int64_t>(&v)) return std::to_string(*number);
  if (const auto* real = std::get_if<double>(&v)) return python_float(*real);
  if (const auto* text = std::get_if<std::string>(&v)) return fmt::format("'{}'", *text);
  if (const auto* global = std::get_if<Global>(&v)) return global->qualified();
  if (std::holds_alternative<Tensor>(v)) return "tensor";
  if (const auto* dict = std::get_if<Dict>(&v)) return dict->items.empty() ? "{}" : "{...}";
  if (const auto* object = std::get_if<Opaque>(&v)) return object->type.qualified() + "(...)";
  return "...";
}

/// The text of a value that names a precision: a string, an int (Lightning's 16), a torch dtype global.
std::optional<std::string> name_of(const Ref& value) {
  if (const auto* text = std::get_if<std::string>(&value->v)) return *text;
  if (const auto* number = std::get_if<int64_t>(&value->v)) return std::to_string(*number);
  if (const auto* global = std::get_if<Global>(&value->v)) return global->name;
  return std::nullopt;
}

// The names that spell each label: torch dtypes, Lightning's and NeMo's precision strings, timm's amp_dtype,
// accelerate's mixed_precision, OpenCLIP's --precision.
constexpr std::pair<std::string_view, Label> kPrecisionNames[] = {
    {"bfloat16", Label::kBf16},  {"bf16", Label::kBf16},     {"bf16-mixed", Label::kBf16},
    {"bf16-true", Label::kBf16}, {"amp_bf16", Label::kBf16}, {"amp_bfloat16", Label::kBf16},
    {"pure_bf16", Label::kBf16}, {"float16", Label::kFp16},  {"half", Label::kFp16},
    {"fp16", Label::kFp16},      {"16", Label::kFp16},       {"16-mixed", Label::kFp16},
    {"16-true", Label::kFp16},   {"amp", Label::kFp16},      {"pure_fp16", Label::kFp16},
    {"float32", Label::kFp32},   {"float", Label::kFp32},    {"fp32", Label::kFp32},
    {"32", Label::kFp32},        {"32-true", Label::kFp32}};

/// The label a dtype or precision name spells (kPrecisionNames); nullopt for anything else (fp8, "auto", 64).
std::optional<Label> label_of_name(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& [spelling, label] : kPrecisionNames)
    if (spelling == name) return label;
  return std::nullopt;
}

/// What an arguments object's precision fields say.
struct FlagReading {
  std::vector<RecordField> fields;      ///< every precision field present, as read
  std::set<Label> says;                 ///< the labels the set flags and named precisions name
  bool any = false;                     ///< at least one precision field was present
  std::vector<std::string> unreadable;  ///< fields whose values name no precision
};

FlagReading read_flags(const Dict* dict, const std::string& path) {
  FlagReading reading;
  auto note = [&](std::string_view key, const Ref& value) {
    reading.any = true;
    reading.fields.push_back({join_key(path, key), python_text(value)});
  };
  for (const auto& [key, label] : kBoolFlags) {
    const Ref* value = field(dict, key);
    const bool* set = value ? std::get_if<bool>(&(*value)->v) : nullptr;
    if (set == nullptr) continue;
    note(key, *value);
    if (*set) reading.says.insert(label);
  }
  if (const Ref* amp = field(dict, "amp"); amp && std::holds_alternative<bool>((*amp)->v)) {
    note("amp", *amp);
    const Ref* amp_dtype = field(dict, "amp_dtype");  // timm's; fairseq's --amp is fp16
    if (std::get<bool>((*amp)->v)) {
      if (amp_dtype) note("amp_dtype", *amp_dtype);
      std::optional<std::string> name = amp_dtype ? name_of(*amp_dtype) : "float16";
      if (auto label = name ? label_of_name(*name) : std::nullopt)
        reading.says.insert(*label);
      else
        reading.unreadable.push_back(join_key(path, "amp_dtype=" + python_text(*amp_dtype)));
    }
  }
  for (std::string_view key : kNamedPrecisions) {
    const Ref* value = field(dict, key);
    if (value == nullptr || std::holds_alternative<None>((*value)->v)) continue;
    note(key, *value);
    std::optional<std::string> name = name_of(*value);
    if (key == "mixed_precision" && name == "no") continue;  // accelerate: no mixed precision
    if (auto label = name ? label_of_name(*name) : std::nullopt)
      reading.says.insert(*label);
    else
      reading.unreadable.push_back(fmt::format("{}={}", join_key(path, key), python_text(*value)));
  }
  return reading;
}

/// Where an Ultralytics run with AMP on trains: a GPU (CUDA indexes "0", "0,1", 0, "cuda:0", or -1 for an idle
/// one), the host (CPU or Apple's MPS, where check_amp turns AMP off), or unknown (None: the run chose itself).
enum class AmpDevice { kAccelerator, kHost, kUnknown };

AmpDevice device_kind(const Ref& device) {
  if (std::holds_alternative<int64_t>(device->v)) return AmpDevice::kAccelerator;
  const auto* text = std::get_if<std::string>(&device->v);
  if (!text || text->empty()) return AmpDevice::kUnknown;
  std::string name = *text;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.starts_with("cpu") || name.starts_with("mps")) return AmpDevice::kHost;
  bool indexes = std::all_of(name.begin(), name.end(), [](char c) { return std::isdigit(c) || c == ',' || c == ' '; });
  return indexes || name == "-1" || name.starts_with("cuda") ? AmpDevice::kAccelerator : AmpDevice::kUnknown;
}

/// The value of a top-level assignment `name = value` in an OpenMMLab config's text (Config.pretty_text: one
/// statement per unindented line, its continuation lines indented), trimmed; nullopt when there is none.
std::optional<std::string_view> config_statement(std::string_view text, std::string_view name) {
  std::string head = fmt::format("{} = ", name);
  size_t at = text.starts_with(head) ? 0 : text.find(fmt::format("\n{}", head));
  if (at == std::string_view::npos) return std::nullopt;
  size_t begin = at + (at == 0 ? 0 : 1) + head.size();
  size_t end = begin;
  while ((end = text.find('\n', end)) != std::string_view::npos && end + 1 < text.size() &&
         (text[end + 1] == ' ' || text[end + 1] == ')' || text[end + 1] == ']' || text[end + 1] == '}'))
    ++end;
  std::string_view value = text.substr(begin, end == std::string_view::npos ? text.size() - begin : end - begin);
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.remove_suffix(1);
  return value;
}

/// A keyword argument of the outermost call in `call` (`dict(type='AmpOptimWrapper', dtype='bfloat16')`: type ->
/// AmpOptimWrapper), unquoted; nested calls, brackets and strings are skipped whole.
std::optional<std::string> call_argument(std::string_view call, std::string_view key) {
  int depth = 0;
  char quote = 0;
  size_t value_at = std::string_view::npos;
  for (size_t i = 0; i < call.size(); ++i) {
    char c = call[i];
    if (quote) {
      if (c == '\\')
        ++i;
      else if (c == quote)
        quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') quote = c;
    if (c == '(' || c == '[' || c == '{') ++depth;
    bool closes = c == ')' || c == ']' || c == '}';
    if (value_at != std::string_view::npos && depth == 1 && (c == ',' || closes)) {
      std::string value(call.substr(value_at, i - value_at));
      std::erase_if(value,
                    [](char ch) { return std::isspace(static_cast<unsigned char>(ch)) || ch == '\'' || ch == '"'; });
      return value;
    }
    if (closes) --depth;
    bool starts_argument = depth == 1 && (c == '(' || c == ',') && value_at == std::string_view::npos;
    if (!starts_argument) continue;
    size_t name_at = call.find_first_not_of(" \n", i + 1);
    if (name_at != std::string_view::npos && call.substr(name_at).starts_with(fmt::format("{}=", key)))
      value_at = name_at + key.size() + 1;
  }
  return std::nullopt;
}

/// A top-level `key: value` line of a YAML file (nested keys are indented), its value without quotes or a comment;
/// nullopt when the file has none.
std::optional<std::string> top_level_yaml_value(std::string_view yaml, std::string_view key) {
  for (size_t at = 0; at < yaml.size();) {
    size_t end = std::min(yaml.find('\n', at), yaml.size());
    std::string_view line = yaml.substr(at, end - at);
    at = end + 1;
    if (!line.starts_with(key) || line.substr(key.size(), 1) != ":") continue;
    std::string value(line.substr(key.size() + 1));
    value = value.substr(0, value.find('#'));
    std::erase_if(value, [](char c) { return c == ' ' || c == '\'' || c == '"' || c == '\r' || c == '\t'; });
    return value;
  }
  return std::nullopt;
}

/// The precision Ultralytics' `amp` and `device` settings train in: amp True autocasts to float16 on a GPU and
/// not at all on the host; "bf16" to bfloat16; False or "fp32" not at all. Nullopt when they name none.
std::optional<Label> ultralytics_precision(const Ref& amp, const Ref& device) {
  if (const auto* on = std::get_if<bool>(&amp->v)) {
    if (!*on) return Label::kFp32;
    switch (device_kind(device)) {
      case AmpDevice::kAccelerator:
        return Label::kFp16;
      case AmpDevice::kHost:
        return Label::kFp32;
      case AmpDevice::kUnknown:
        return std::nullopt;
    }
    return std::nullopt;
  }
  std::optional<std::string> name = name_of(amp);
  if (name == "fp32") return Label::kFp32;
  if (name == "bf16") return Label::kBf16;
  return std::nullopt;
}

bool is_trainer_arguments(const Global& type) {
  return type.name.ends_with("TrainingArguments") || (type.module.starts_with("trl.") && type.name.ends_with("Config"));
}

bool is_grad_scaler_state(const Dict& dict) {
  return std::all_of(std::begin(kGradScalerKeys), std::end(kGradScalerKeys),
                     [&](std::string_view key) { return field(&dict, key) != nullptr; });
}

class RecordFinder {
 public:
  explicit RecordFinder(const std::filesystem::path& file) : file_(file.string()) {}
  FoundRecords found;

  void visit(const Ref& value, const std::string& path, int depth) {
    if (depth > kMaxDepth || std::holds_alternative<Tensor>(value->v) || !visited_.insert(value.get()).second) return;
    if (const auto* object = std::get_if<Opaque>(&value->v)) {
      read_object(*object, value, path);
      for (const Ref& part : {object->state, object->contents})
        if (part) visit(part, path, depth + 1);
    } else if (const auto* dict = std::get_if<Dict>(&value->v)) {
      if (is_grad_scaler_state(*dict))
        add(RecordKind::kGradScaler, Label::kFp16, {{join_key(path, "scale"), python_text(*field(dict, "scale"))}});
      for (const auto& [key, item] : dict->items) {
        std::string inner = join_key(path, key_text(key));
        read_keyed(key_text(key), item, inner);
        visit(item, inner, depth + 1);
      }
    } else if (const auto* list = std::get_if<List>(&value->v)) {
      for (size_t i = 0; i < list->items.size(); ++i)
        visit(list->items[i], join_key(path, std::to_string(i)), depth + 1);
    } else if (const auto* tuple = std::get_if<Tuple>(&value->v)) {
      for (const Ref& item : tuple->items) visit(item, path, depth + 1);  // an object's (dict, slots) state
    }
  }

 private:
  /// Objects that are records by their class.
  void read_object(const Opaque& object, const Ref& value, const std::string& path) {
    std::string name = object.type.qualified();
    if (is_trainer_arguments(object.type)) {
      add_flags(RecordKind::kTrainerArguments, read_flags(dict_of(value), path), path, name);
    } else if (name == "argparse.Namespace") {
      // Only the run's own arguments (a checkpoint's `args`) are expected to name a precision.
      add_flags(RecordKind::kRunArguments, read_flags(dict_of(value), path), path, path == "args" ? name : "");
    } else if (object.type.name.ends_with("DeepSpeedConfig")) {  // transformers' and accelerate's wrappers
      read_deepspeed(field(dict_of(value), "config"), join_key(path, "config"));
    } else if (object.type.name == "GradScaler") {  // a pickled scaler object, not its state_dict()
      const Ref* enabled = field(dict_of(value), "_enabled");
      if (enabled && std::holds_alternative<bool>((*enabled)->v) && std::get<bool>((*enabled)->v))
        add(RecordKind::kGradScaler, Label::kFp16, {{join_key(path, "_enabled"), "True"}});
    }
  }

  /// Records found by their key, as the frameworks save them.
  void read_keyed(const std::string& key, const Ref& item, const std::string& path) {
    const Dict* dict = dict_of(item);
    if (key == "cfg") {
      if (const Ref* common = field(dict, "common"); common && std::holds_alternative<Dict>((*common)->v))
        add_flags(RecordKind::kFairseqConfig, read_flags(dict_of(*common), join_key(path, "common")), path, "cfg");
      else if (const auto* object = std::get_if<Opaque>(&item->v))
        unreadable(
            fmt::format("{}: a pickled {}, whose values precdetect does not read", path, object->type.qualified()));
    } else if (key == "ds_config") {
      read_deepspeed(&item, path);
    } else if (key == "last_optimizer_state" || key == "loss_scaler0") {  // fairseq FP16Optimizer; apex amp
      if (const Ref* scale = field(dict, "loss_scale"); scale && !std::holds_alternative<None>((*scale)->v))
        add(RecordKind::kLossScale, Label::kFp16, {{join_key(path, "loss_scale"), python_text(*scale)}});
    } else if (key == "grad_scaler") {  // Megatron-LM's fp16 optimizer; {} proves nothing (a disabled scaler)
      if (const Ref* scale = field(dict, "scale"))
        add(RecordKind::kLossScale, Label::kFp16, {{join_key(path, "scale"), python_text(*scale)}});
    } else if (key == "config" && path == "config") {  // nanoGPT, llama2.c: train.py's settings
      read_train_config(dict, path);
    } else if (key == "meta") {  // OpenMMLab: the config text mmengine (cfg) or mmcv 1.x (config) saved
      if (const Ref* text = field(dict, "cfg"); text && std::holds_alternative<std::string>((*text)->v))
        read_mmengine_config(std::get<std::string>((*text)->v), join_key(path, "cfg"));
      else if (const Ref* text = field(dict, "config"); text && std::holds_alternative<std::string>((*text)->v))
        read_mmcv_config(std::get<std::string>((*text)->v), join_key(path, "config"));
    } else if (key == "train_args") {  // Ultralytics: vars(trainer.args)
      read_ultralytics_arguments(dict, path);
    } else if (key == "hyper_parameters") {  // Lightning
      if (field(dict, "precision") != nullptr)
        add_flags(RecordKind::kHyperparameters, read_flags(dict, path), path, key);
    }
  }

  /// nanoGPT's and llama2.c's settings: `dtype` is the autocast dtype when `device` is CUDA; elsewhere train.py
  /// runs without autocast. Only a dict with their `dtype`, `device` and `compile` settings is theirs.
  void read_train_config(const Dict* dict, const std::string& path) {
    const Ref* dtype = field(dict, "dtype");
    const Ref* device = field(dict, "device");
    if (!dtype || !device || !field(dict, "compile")) return;
    const auto* dtype_name = std::get_if<std::string>(&(*dtype)->v);
    const auto* device_name = std::get_if<std::string>(&(*device)->v);
    if (!dtype_name || !device_name) return;
    std::vector<RecordField> fields = {{join_key(path, "dtype"), python_text(*dtype)},
                                       {join_key(path, "device"), python_text(*device)}};
    std::optional<Label> label =
        device_name->find("cuda") == std::string::npos ? Label::kFp32 : label_of_name(*dtype_name);
    if (!label)
      return unreadable(fmt::format("{}.dtype={} names no precision precdetect knows", path, python_text(*dtype)));
    add(RecordKind::kTrainConfig, *label, std::move(fields));
  }

  /// mmengine's config (Runner.save_checkpoint: meta.cfg = cfg.pretty_text): optim_wrapper's type and dtype
  /// (mmengine/optim/optimizer/amp_optimizer_wrapper.py: dtype None autocasts to float16).
  void read_mmengine_config(std::string_view text, const std::string& path) {
    std::optional<std::string_view> wrapper = config_statement(text, "optim_wrapper");
    if (!wrapper) return;
    std::string type = call_argument(*wrapper, "type").value_or("");
    std::string dtype = call_argument(*wrapper, "dtype").value_or("None");
    std::vector<RecordField> fields = {{join_key(path, "optim_wrapper.type"), type}};
    if (type == "AmpOptimWrapper") fields.push_back({join_key(path, "optim_wrapper.dtype"), dtype});
    std::optional<Label> label;
    if (type == "OptimWrapper")
      label = Label::kFp32;
    else if (type == "AmpOptimWrapper" || type == "ApexOptimWrapper")
      label = dtype == "None" ? Label::kFp16 : label_of_name(dtype.substr(dtype.rfind('.') + 1));
    if (!label)
      return unreadable(fmt::format("{}: optim_wrapper type={} dtype={} names no precision precdetect knows", path,
                                    type.empty() ? "(none)" : type, dtype));
    add(RecordKind::kOpenMmlabConfig, *label, std::move(fields));
  }

  /// mmcv 1.x's config (tools/train.py: meta['config'] = cfg.pretty_text): `fp16 = dict(loss_scale=...)` makes
  /// apis/train.py build an Fp16OptimizerHook, as does an optimizer_config of that type; a training config
  /// (one with optimizer_config) without either trained in fp32.
  void read_mmcv_config(std::string_view text, const std::string& path) {
    std::optional<std::string_view> fp16 = config_statement(text, "fp16");
    std::optional<std::string_view> optimizer = config_statement(text, "optimizer_config");
    if (!optimizer && !fp16) return;
    std::string hook = optimizer ? call_argument(*optimizer, "type").value_or("") : "";
    bool half = (fp16 && *fp16 != "None") || hook.find("Fp16") != std::string::npos;
    std::vector<RecordField> fields = {{join_key(path, "fp16"), fp16 ? std::string(*fp16) : "(absent)"}};
    if (!hook.empty()) fields.push_back({join_key(path, "optimizer_config.type"), hook});
    add(RecordKind::kOpenMmlabConfig, half ? Label::kFp16 : Label::kFp32, std::move(fields));
  }

  /// Ultralytics' train_args (engine/trainer.py _setup_train, 8.x): `amp` True autocasts to float16 where the
  /// device is a GPU, "bf16" to bfloat16, False or "fp32" not at all; check_amp turns AMP off on a CPU or MPS.
  /// Only a dict with Ultralytics' `amp`, `task` and `imgsz` settings is theirs.
  void read_ultralytics_arguments(const Dict* dict, const std::string& path) {
    const Ref* amp = field(dict, "amp");
    const Ref* device = field(dict, "device");
    if (!amp || !device || !field(dict, "task") || !field(dict, "imgsz")) return;
    std::vector<RecordField> fields = {{join_key(path, "amp"), python_text(*amp)},
                                       {join_key(path, "device"), python_text(*device)}};
    std::optional<Label> label = ultralytics_precision(*amp, *device);
    if (!label)
      return unreadable(
          fmt::format("{}.amp={}, device={} names no precision precdetect knows (a device the run "
                      "chose itself, or one AMP may not use)",
                      path, python_text(*amp), python_text(*device)));
    add(RecordKind::kUltralyticsArguments, *label, std::move(fields));
  }

  /// A DeepSpeed config dict: fp16.enabled, bf16.enabled (legacy "bfloat16"), amp.enabled (apex); no block
  /// enabled is DeepSpeed's default, fp32.
  void read_deepspeed(const Ref* config, const std::string& path) {
    if (config == nullptr) return;
    if (const auto* text = std::get_if<std::string>(&(*config)->v))
      return unreadable(fmt::format("{}: the run passed a config file name ('{}'), not the config", path, *text));
    const Dict* dict = dict_of(*config);
    if (dict == nullptr) return unreadable(fmt::format("{}={}: not a config dict", path, python_text(*config)));
    FlagReading reading{.any = true};
    for (auto [block, label] :
         {std::pair{"fp16", Label::kFp16}, {"bf16", Label::kBf16}, {"bfloat16", Label::kBf16}, {"amp", Label::kFp16}}) {
      const Ref* enabled = field(dict_of(field(dict, block) ? *field(dict, block) : nullptr), "enabled");
      if (enabled == nullptr) continue;
      std::string key = join_key(join_key(path, block), "enabled");
      reading.fields.push_back({key, python_text(*enabled)});
      const auto* set = std::get_if<bool>(&(*enabled)->v);
      if (set == nullptr)  // "auto" that nothing filled in
        reading.unreadable.push_back(fmt::format("{}={}", key, python_text(*enabled)));
      else if (*set)
        reading.says.insert(label);
    }
    if (reading.fields.empty())  // DeepSpeed's defaults: fp16.enabled and bf16.enabled are false
      reading.fields = {{join_key(path, "fp16"), "(absent)"}, {join_key(path, "bf16"), "(absent)"}};
    add_flags(RecordKind::kDeepSpeedConfig, std::move(reading), path, "ds_config");
  }

  /// The record a reading makes: the one precision its fields name; fp32 when precision fields are present and
  /// none is set. Fields that contradict each other or name no precision make a warning instead, and so does
  /// an object that should hold flags and holds none (`expected` names it; empty: nothing was expected).
  void add_flags(RecordKind kind, FlagReading reading, const std::string& path, const std::string& expected) {
    std::string where = path.empty() ? expected : path;
    if (!reading.unreadable.empty())
      return unreadable(fmt::format("{} names no precision precdetect knows", fmt::join(reading.unreadable, ", ")));
    if (!reading.any) {
      if (!expected.empty()) unreadable(fmt::format("{} holds no precision field precdetect knows", where));
      return;
    }
    reading.says.erase(Label::kFp32);  // fp32 parameters beside a half flag: mixed precision's master weights
    if (reading.says.size() > 1) {
      std::vector<std::string> set;
      for (const RecordField& item : reading.fields) set.push_back(item.key + "=" + item.value);
      return unreadable(fmt::format("{}: {} contradict each other", where, fmt::join(set, ", ")));
    }
    add(kind, reading.says.empty() ? Label::kFp32 : *reading.says.begin(), std::move(reading.fields));
  }

  void add(RecordKind kind, Label label, std::vector<RecordField> fields) {
    merge_record(found.records, {.kind = kind, .label = label, .fields = std::move(fields), .files = {file_}});
  }

  void unreadable(std::string what) {
    found.warnings.push_back({.code = WarningCode::kRecordUnreadable, .file = file_, .names = {std::move(what)}});
  }

  std::string file_;
  std::set<const Value*> visited_;
};

}  // namespace

FoundRecords find_training_records(const pickle::Result& pickle, const std::filesystem::path& file) {
  RecordFinder finder(file);
  finder.visit(pickle.root, "", 0);
  return std::move(finder.found);
}

FoundRecords find_nemo_config_record(std::string_view model_config_yaml, const std::filesystem::path& file) {
  FoundRecords found;
  std::optional<std::string> value = top_level_yaml_value(model_config_yaml, "precision");
  if (!value) return found;
  RecordField field{"model_config.yaml: precision", *value};
  if (std::optional<Label> label = label_of_name(*value))
    found.records.push_back({RecordKind::kNemoConfig, *label, {field}, {file.string()}});
  else
    found.warnings.push_back(
        {.code = WarningCode::kRecordUnreadable,
         .file = file.string(),
         .names = {fmt::format("model_config.yaml: precision={} names no precision precdetect knows", *value)}});
  return found;
}

FoundRecords find_espnet_config_record(std::string_view config_yaml, const std::filesystem::path& file) {
  FoundRecords found;
  std::optional<std::string> use_amp = top_level_yaml_value(config_yaml, "use_amp");
  std::optional<std::string> ngpu = top_level_yaml_value(config_yaml, "ngpu");
  if (!use_amp || !ngpu) return found;  // another framework's config.yaml
  std::vector<RecordField> fields = {{"config.yaml: use_amp", *use_amp}, {"config.yaml: ngpu", *ngpu}};
  std::optional<Label> label;
  if (*use_amp == "false" || *ngpu == "0")
    label = Label::kFp32;
  else if (*use_amp == "true" && std::all_of(ngpu->begin(), ngpu->end(), [](char c) { return std::isdigit(c); }))
    label = Label::kFp16OrBf16;  // float16, or bfloat16 where the GPU supports it: the file does not say which
  if (label)
    found.records.push_back({RecordKind::kEspnetConfig, *label, std::move(fields), {file.string()}});
  else
    found.warnings.push_back({.code = WarningCode::kRecordUnreadable,
                              .file = file.string(),
                              .names = {fmt::format("config.yaml: use_amp={}, ngpu={} names no precision precdetect "
                                                    "knows",
                                                    *use_amp, *ngpu)}});
  return found;
}

std::optional<TrainingRecord> record_in_file_name(const std::filesystem::path& file) {
  std::string name = file.filename().string();
  if (!name.starts_with("bf16_zero_pp_rank_")) return std::nullopt;
  return TrainingRecord{.kind = RecordKind::kDeepSpeedShardName,
                        .label = Label::kBf16,
                        .fields = {{"(file name)", "bf16_zero_pp_rank_*_optim_states.pt"}},
                        .files = {file.string()}};
}

void merge_record(std::vector<TrainingRecord>& records, TrainingRecord record) {
  for (TrainingRecord& known : records) {
    if (known.kind != record.kind || known.label != record.label || known.fields != record.fields) continue;
    for (std::string& file : record.files)
      if (std::find(known.files.begin(), known.files.end(), file) == known.files.end())
        known.files.push_back(std::move(file));
    return;
  }
  records.push_back(std::move(record));
}

}  // namespace precdetect
