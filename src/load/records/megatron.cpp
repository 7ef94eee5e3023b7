// Megatron-LM's fp16 optimizer: its `grad_scaler` state's scale ({} proves nothing: a disabled scaler).

#include "precdetect/load/records/framework_records.h"

namespace precdetect {
namespace {

using namespace pickle;

bool read_keyed(const std::string& key, const Ref& item, const std::string& path, RecordSink& sink) {
  if (key != "grad_scaler") return false;
  sink.add_loss_scale(dict_of(item), "scale", path, /*if_set=*/false);
  return true;
}

}  // namespace

extern const FrameworkRecords kMegatronRecords{.framework = "Megatron-LM", .read_keyed = read_keyed};

}  // namespace precdetect
