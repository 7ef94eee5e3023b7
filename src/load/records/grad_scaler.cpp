// torch.amp's GradScaler: its state_dict() wherever a run saved it, or a pickled scaler object. Loss scaling is
// what only fp16 mixed precision needs.

#include <algorithm>
#include <iterator>

#include "precdetect/load/records/framework_records.h"

namespace precdetect {
namespace {

using namespace pickle;

// torch.amp.GradScaler.state_dict() (torch/amp/grad_scaler.py); {} when the scaler is disabled.
constexpr std::string_view kGradScalerKeys[] = {"scale", "growth_factor", "backoff_factor", "growth_interval",
                                                "_growth_tracker"};

bool read_object(const Opaque& object, const Ref& value, const std::string& path, RecordSink& sink) {
  if (object.type.name != "GradScaler") return false;  // a pickled scaler object, not its state_dict()
  const Ref* enabled = field(dict_of(value), "_enabled");
  if (enabled && std::holds_alternative<bool>((*enabled)->v) && std::get<bool>((*enabled)->v))
    sink.add(RecordKind::kGradScaler, Label::kFp16, {{join_key(path, "_enabled"), "True"}});
  return true;
}

bool read_dict(const Dict& dict, const std::string& path, RecordSink& sink) {
  bool state = std::all_of(std::begin(kGradScalerKeys), std::end(kGradScalerKeys),
                           [&](std::string_view key) { return field(&dict, key) != nullptr; });
  if (state)
    sink.add(RecordKind::kGradScaler, Label::kFp16, {{join_key(path, "scale"), python_text(*field(&dict, "scale"))}});
  return state;
}

}  // namespace

extern const FrameworkRecords kGradScalerRecords{
    .framework = "torch.amp", .read_object = read_object, .read_dict = read_dict};

}  // namespace precdetect
