// NVIDIA apex's amp: the loss scaler's state (`loss_scaler0`) that amp.state_dict() saves, fp16's alone.

#include "precdetect/load/records/framework_records.h"

namespace precdetect {
namespace {

using namespace pickle;

bool read_keyed(const std::string& key, const Ref& item, const std::string& path, RecordSink& sink) {
  if (key != "loss_scaler0") return false;
  sink.add_loss_scale(dict_of(item), "loss_scale", path, /*if_set=*/true);
  return true;
}

}  // namespace

extern const FrameworkRecords kApexRecords{.framework = "apex", .read_keyed = read_keyed};

}  // namespace precdetect
