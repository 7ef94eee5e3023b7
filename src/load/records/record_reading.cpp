// What the readers of src/load/records/ share: values as a pickle's graph holds them, precision names, run flags, and
// the sink that collects records and warnings.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "precdetect/load/records/framework_records.h"

namespace precdetect {

using namespace pickle;

namespace {

// Boolean run flags and the precision each turns on: fairseq, Megatron-LM and the HF Trainer (fp16, bf16,
// memory_efficient_*), timm before 2022-10 (native_amp, apex_amp). timm's and fairseq's `amp` is read apart.
constexpr std::pair<std::string_view, Label> kBoolFlags[] = {
    {"fp16", Label::kFp16},       {"memory_efficient_fp16", Label::kFp16},
    {"native_amp", Label::kFp16}, {"apex_amp", Label::kFp16},
    {"bf16", Label::kBf16},       {"memory_efficient_bf16", Label::kBf16}};
// Fields that name a precision: transformers 5's mixed_precision ("no", "fp16", "bf16"), Megatron-LM's
// params_dtype (torch.float16, ...), timm's model_dtype, a `precision` string (Lightning's, OpenCLIP's).
constexpr std::string_view kNamedPrecisions[] = {"mixed_precision", "params_dtype", "model_dtype", "precision"};

/// A float as Python's repr writes it: 65536.0, 0.5, 1e-05.
std::string python_float(double value) {
  if (std::isfinite(value) && value == std::trunc(value) && std::fabs(value) < 1e16)
    return fmt::format("{:.1f}", value);
  return fmt::format("{}", value);
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

}  // namespace

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

std::optional<std::string> name_of(const Ref& value) {
  if (const auto* text = std::get_if<std::string>(&value->v)) return *text;
  if (const auto* number = std::get_if<int64_t>(&value->v)) return std::to_string(*number);
  if (const auto* global = std::get_if<Global>(&value->v)) return global->name;
  return std::nullopt;
}

std::optional<Label> label_of_name(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& [spelling, label] : kPrecisionNames)
    if (spelling == name) return label;
  return std::nullopt;
}

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

void RecordSink::add(RecordKind kind, Label label, std::vector<RecordField> fields) {
  merge_record(found.records, {.kind = kind, .label = label, .fields = std::move(fields), .files = {file_}});
}

void RecordSink::add_flags(RecordKind kind, FlagReading reading, const std::string& path, const std::string& expected) {
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
    set.reserve(reading.fields.size());
    for (const RecordField& item : reading.fields) set.push_back(item.key + "=" + item.value);
    return unreadable(fmt::format("{}: {} contradict each other", where, fmt::join(set, ", ")));
  }
  add(kind, reading.says.empty() ? Label::kFp32 : *reading.says.begin(), std::move(reading.fields));
}

void RecordSink::add_loss_scale(const Dict* dict, std::string_view key, const std::string& path, bool if_set) {
  const Ref* scale = field(dict, key);
  if (scale == nullptr || (if_set && std::holds_alternative<None>((*scale)->v))) return;
  add(RecordKind::kLossScale, Label::kFp16, {{join_key(path, key), python_text(*scale)}});
}

void RecordSink::unreadable(std::string what) {
  found.warnings.push_back({.code = WarningCode::kRecordUnreadable, .file = file_, .names = {std::move(what)}});
}

}  // namespace precdetect
