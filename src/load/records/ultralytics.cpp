// Ultralytics' `train_args` (vars(trainer.args), in every YOLO .pt it saves): amp, and the device AMP needs.

#include <fmt/format.h>

#include <algorithm>

#include "precdetect/load/records/framework_records.h"

namespace precdetect {
namespace {

using namespace pickle;

/// Where an Ultralytics run with AMP on trains: a GPU (CUDA indexes "0", "0,1", 0, "cuda:0", or -1 for an idle
/// one), the host (CPU or Apple's MPS, where check_amp turns AMP off), or unknown (None: the run chose itself).
enum class AmpDevice { kAccelerator, kHost, kUnknown };

AmpDevice device_kind(const Ref& device) {
  if (std::holds_alternative<int64_t>(device->v)) return AmpDevice::kAccelerator;
  const auto* text = std::get_if<std::string>(&device->v);
  if (!text || text->empty()) return AmpDevice::kUnknown;
  std::string name = *text;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.starts_with("cpu") || name.starts_with("mps")) return AmpDevice::kHost;
  bool indexes = std::all_of(name.begin(), name.end(), [](char c) { return std::isdigit(c) || c == ',' || c == ' '; });
  return indexes || name == "-1" || name.starts_with("cuda") ? AmpDevice::kAccelerator : AmpDevice::kUnknown;
}

/// The precision Ultralytics' `amp` and `device` settings train in: amp True autocasts to float16 on a GPU and
/// not at all on the host; "bf16" to bfloat16; False or "fp32" not at all. Nullopt when they name none.
std::optional<Label> ultralytics_precision(const Ref& amp, const Ref& device) {
  if (const auto* on = std::get_if<bool>(&amp->v)) {
    if (!*on) return Label::kFp32;
    switch (device_kind(device)) {
      case AmpDevice::kAccelerator:
        return Label::kFp16;
      case AmpDevice::kHost:
        return Label::kFp32;
      case AmpDevice::kUnknown:
        return std::nullopt;
    }
    return std::nullopt;
  }
  std::optional<std::string> name = name_of(amp);
  if (name == "fp32") return Label::kFp32;
  if (name == "bf16") return Label::kBf16;
  return std::nullopt;
}

/// Ultralytics' train_args (engine/trainer.py _setup_train, 8.x): `amp` True autocasts to float16 where the
/// device is a GPU, "bf16" to bfloat16, False or "fp32" not at all; check_amp turns AMP off on a CPU or MPS.
/// Only a dict with Ultralytics' `amp`, `task` and `imgsz` settings is theirs.
void read_ultralytics_arguments(const Dict* dict, const std::string& path, RecordSink& sink) {
  const Ref* amp = field(dict, "amp");
  const Ref* device = field(dict, "device");
  if (!amp || !device || !field(dict, "task") || !field(dict, "imgsz")) return;
  std::vector<RecordField> fields = {{join_key(path, "amp"), python_text(*amp)},
                                     {join_key(path, "device"), python_text(*device)}};
  std::optional<Label> label = ultralytics_precision(*amp, *device);
  if (!label)
    return sink.unreadable(
        fmt::format("{}.amp={}, device={} names no precision precdetect knows (a device the run "
                    "chose itself, or one AMP may not use)",
                    path, python_text(*amp), python_text(*device)));
  sink.add(RecordKind::kUltralyticsArguments, *label, std::move(fields));
}

bool read_keyed(const std::string& key, const Ref& item, const std::string& path, RecordSink& sink) {
  if (key != "train_args") return false;
  read_ultralytics_arguments(dict_of(item), path, sink);
  return true;
}

}  // namespace

extern const FrameworkRecords kUltralyticsRecords{.framework = "Ultralytics", .read_keyed = read_keyed};

}  // namespace precdetect
