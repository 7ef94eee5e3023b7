// DeepSpeed: its config (the `ds_config` a run saves, transformers' and accelerate's DeepSpeedConfig wrappers) and
// the names of its ZeRO optimizer shards.

#include <fmt/format.h>

#include "precdetect/load/records/framework_records.h"

namespace precdetect {
namespace {

using namespace pickle;

/// A DeepSpeed config dict: fp16.enabled, bf16.enabled (legacy "bfloat16"), amp.enabled (apex); no block enabled
/// is DeepSpeed's default, fp32.
void read_deepspeed(const Ref* config, const std::string& path, RecordSink& sink) {
  if (config == nullptr) return;
  if (const auto* text = std::get_if<std::string>(&(*config)->v))
    return sink.unreadable(fmt::format("{}: the run passed a config file name ('{}'), not the config", path, *text));
  const Dict* dict = dict_of(*config);
  if (dict == nullptr) return sink.unreadable(fmt::format("{}={}: not a config dict", path, python_text(*config)));
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
  sink.add_flags(RecordKind::kDeepSpeedConfig, std::move(reading), path, "ds_config");
}

bool read_object(const Opaque& object, const Ref& value, const std::string& path, RecordSink& sink) {
  if (!object.type.name.ends_with("DeepSpeedConfig")) return false;  // transformers' and accelerate's wrappers
  read_deepspeed(field(dict_of(value), "config"), join_key(path, "config"), sink);
  return true;
}

bool read_keyed(const std::string& key, const Ref& item, const std::string& path, RecordSink& sink) {
  if (key != "ds_config") return false;
  read_deepspeed(&item, path, sink);
  return true;
}

}  // namespace

extern const FrameworkRecords kDeepSpeedRecords{
    .framework = "DeepSpeed", .read_object = read_object, .read_keyed = read_keyed};

std::optional<TrainingRecord> record_in_file_name(const std::filesystem::path& file) {
  std::string name = file.filename().string();
  if (!name.starts_with("bf16_zero_pp_rank_")) return std::nullopt;
  return TrainingRecord{.kind = RecordKind::kDeepSpeedShardName,
                        .label = Label::kBf16,
                        .fields = {{"(file name)", "bf16_zero_pp_rank_*_optim_states.pt"}},
                        .files = {file.string()}};
}

}  // namespace precdetect
