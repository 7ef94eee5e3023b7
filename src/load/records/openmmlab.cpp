// OpenMMLab: the config text its runners save in `meta`: mmengine's optim_wrapper (Runner.save_checkpoint:
// meta.cfg), or mmcv 1.x's fp16 and optimizer_config (tools/train.py: meta.config).

#include <fmt/format.h>

#include "precdetect/load/records/framework_records.h"

namespace precdetect {
namespace {

using namespace pickle;

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

/// mmengine's config (Runner.save_checkpoint: meta.cfg = cfg.pretty_text): optim_wrapper's type and dtype
/// (mmengine/optim/optimizer/amp_optimizer_wrapper.py: dtype None autocasts to float16).
void read_mmengine_config(std::string_view text, const std::string& path, RecordSink& sink) {
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
    return sink.unreadable(fmt::format("{}: optim_wrapper type={} dtype={} names no precision precdetect knows", path,
                                       type.empty() ? "(none)" : type, dtype));
  sink.add(RecordKind::kOpenMmlabConfig, *label, std::move(fields));
}

/// mmcv 1.x's config (tools/train.py: meta['config'] = cfg.pretty_text): `fp16 = dict(loss_scale=...)` makes
/// apis/train.py build an Fp16OptimizerHook, as does an optimizer_config of that type; a training config
/// (one with optimizer_config) without either trained in fp32.
void read_mmcv_config(std::string_view text, const std::string& path, RecordSink& sink) {
  std::optional<std::string_view> fp16 = config_statement(text, "fp16");
  std::optional<std::string_view> optimizer = config_statement(text, "optimizer_config");
  if (!optimizer && !fp16) return;
  std::string hook = optimizer ? call_argument(*optimizer, "type").value_or("") : "";
  bool half = (fp16 && *fp16 != "None") || hook.find("Fp16") != std::string::npos;
  std::vector<RecordField> fields = {{join_key(path, "fp16"), fp16 ? std::string(*fp16) : "(absent)"}};
  if (!hook.empty()) fields.push_back({join_key(path, "optimizer_config.type"), hook});
  sink.add(RecordKind::kOpenMmlabConfig, half ? Label::kFp16 : Label::kFp32, std::move(fields));
}

bool read_keyed(const std::string& key, const Ref& item, const std::string& path, RecordSink& sink) {
  if (key != "meta") return false;
  const Dict* dict = dict_of(item);
  if (const Ref* text = field(dict, "cfg"); text && std::holds_alternative<std::string>((*text)->v))
    read_mmengine_config(std::get<std::string>((*text)->v), join_key(path, "cfg"), sink);
  else if (const Ref* text = field(dict, "config"); text && std::holds_alternative<std::string>((*text)->v))
    read_mmcv_config(std::get<std::string>((*text)->v), join_key(path, "config"), sink);
  return true;
}

}  // namespace

extern const FrameworkRecords kOpenMmlabRecords{.framework = "OpenMMLab", .read_keyed = read_keyed};

}  // namespace precdetect
