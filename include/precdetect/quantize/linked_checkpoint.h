#pragma once
/// A model as quantize reads it: the checkpoint load opened (its records as stored), and beside each record what
/// the quantization schemes read it as. Scan and diff open models through open_model(); load links nothing.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "precdetect/discover/discover.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/quantize/link.h"

namespace precdetect {

/// What quantize read one record as: a weight read through its scheme (`link`), a weight of a scheme precdetect
/// does not read (`unread_scheme`: counted, never analyzed as the numbers it is stored as, out of the verdict), or
/// neither (a tensor as stored; a scheme's part, which has the role TensorRole::kScale).
struct RecordReading {
  std::optional<Link> link;
  /// The scheme, as its config or its tensors name it ("compressed-tensors mxfp4-pack-quantized"); empty for a
  /// tensor read or not quantized.
  std::string unread_scheme;
};

/// A checkpoint whose quantized weights are linked: its records (renamed where a scheme reports codes under the
/// weight's own name, its parts of role TensorRole::kScale) and one reading per record.
struct LinkedCheckpoint : Checkpoint {
  std::vector<RecordReading> readings;  ///< readings[i] is tensors[i]'s
  /// config.json's object as open_model read it, beneath the model's root; null when absent or unreadable. What
  /// names the model (classify/model_identity.h) reads it here: the file is read once, and confined.
  nlohmann::json config;

  /// The reading of `record`, one of `tensors`.
  const RecordReading& reading(const TensorRecord& record) const;
};

/// The reading of a tensor no scheme read: as stored.
extern const RecordReading kAsStored;

/// open_checkpoint, then link_checkpoint with the model's config.json and a quantizer's own settings file beside it
/// (AutoGPTQ's quantize_config.json, optimum-quanto's quantization map). Throws what either throws.
LinkedCheckpoint open_model(const ModelSource& source, ReadMode mode = ReadMode::kMmap);

/// `checkpoint` with every scheme's link run over its records, in quant_schemes' order. `config`: config.json's
/// object with a quantizer's settings merged in, null without one (the checkpoint's tensor subclasses are merged
/// in here); `file` names the model in errors. Throws Error(kSizeMismatch) (or the format's own code) where a
/// scheme finds parts that do not fit.
LinkedCheckpoint link_checkpoint(Checkpoint checkpoint, const nlohmann::json& config, const std::string& file);

/// Keeps the records of `component` (load/components.h: component_of) with their readings. Throws
/// Error(kMissingTensor) naming `file` when it has none.
void keep_component(LinkedCheckpoint& model, std::string_view component, const std::string& file);

}  // namespace precdetect
