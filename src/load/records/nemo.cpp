// NeMo: the record a .nemo archive's model_config.yaml holds, its top-level `precision:` (the trainer's, as
// Megatron-based models copy it).

#include <fmt/format.h>

#include "precdetect/load/records/framework_records.h"

namespace precdetect {

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

}  // namespace precdetect
