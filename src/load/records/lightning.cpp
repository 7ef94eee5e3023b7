// Lightning's `hyper_parameters.precision`, where the module saved the trainer's precision with its hyperparameters.

#include "precdetect/load/records/framework_records.h"

namespace precdetect {
namespace {

using namespace pickle;

bool read_keyed(const std::string& key, const Ref& item, const std::string& path, RecordSink& sink) {
  if (key != "hyper_parameters") return false;
  const Dict* dict = dict_of(item);
  if (field(dict, "precision") != nullptr)
    sink.add_flags(RecordKind::kHyperparameters, read_flags(dict, path), path, key);
  return true;
}

}  // namespace

extern const FrameworkRecords kLightningRecords{.framework = "Lightning", .read_keyed = read_keyed};

}  // namespace precdetect
