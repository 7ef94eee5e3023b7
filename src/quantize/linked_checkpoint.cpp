#include "precdetect/quantize/linked_checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "precdetect/core/error.h"
#include "precdetect/load/components.h"
#include "precdetect/load/tensor_subclasses.h"
#include "precdetect/quantize/scheme.h"

namespace precdetect {

const RecordReading kAsStored{};

const RecordReading& LinkedCheckpoint::reading(const TensorRecord& record) const {
  const auto index = static_cast<size_t>(&record - tensors.data());
  if (&record < tensors.data() || index >= readings.size())
    throw std::logic_error("LinkedCheckpoint::reading: a record of another checkpoint");
  return readings[index];
}

LinkedCheckpoint link_checkpoint(Checkpoint checkpoint, const nlohmann::json& config, const std::string& file) {
  LinkedCheckpoint model{std::move(checkpoint)};
  model.readings.resize(model.tensors.size());
  const nlohmann::json settings = with_tensor_subclasses(config, model.tensor_subclasses);
  Linking linking(model, settings, file);
  for (const QuantScheme* scheme : quant_schemes()) scheme->link(linking);
  return model;
}

void keep_component(LinkedCheckpoint& model, std::string_view component, const std::string& file) {
  size_t kept = 0;
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    if (component_of(model.tensors[i].name) != component) continue;
    if (kept != i) {  // a record moved onto itself would be left empty
      model.tensors[kept] = std::move(model.tensors[i]);
      model.readings[kept] = std::move(model.readings[i]);
    }
    ++kept;
  }
  model.tensors.resize(kept);
  model.readings.resize(kept);
  if (kept == 0) fail(ErrorCode::kMissingTensor, file, fmt::format("holds no tensor of the component `{}`", component));
}

}  // namespace precdetect
