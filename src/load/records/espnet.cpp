// ESPnet: the record its config.yaml holds (the run's arguments, dumped beside its model): `use_amp` and `ngpu`.

#include <fmt/format.h>

#include <algorithm>

#include "precdetect/load/records/framework_records.h"

namespace precdetect {

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

}  // namespace precdetect
