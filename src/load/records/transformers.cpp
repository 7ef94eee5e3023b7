// transformers' TrainingArguments (training_args.bin, and TRL's configs that extend it): fp16, bf16 and
// mixed_precision as the Trainer ran with them.

#include "precdetect/load/records/framework_records.h"

namespace precdetect {
namespace {

using namespace pickle;

bool is_trainer_arguments(const Global& type) {
  return type.name.ends_with("TrainingArguments") || (type.module.starts_with("trl.") && type.name.ends_with("Config"));
}

bool read_object(const Opaque& object, const Ref& value, const std::string& path, RecordSink& sink) {
  if (!is_trainer_arguments(object.type)) return false;
  sink.add_flags(RecordKind::kTrainerArguments, read_flags(dict_of(value), path), path, object.type.qualified());
  return true;
}

}  // namespace

extern const FrameworkRecords kTransformersRecords{.framework = "transformers", .read_object = read_object};

}  // namespace precdetect
