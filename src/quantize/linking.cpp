#include <utility>

#include "precdetect/quantize/scheme.h"

namespace precdetect {

Linking::Linking(LinkedCheckpoint& model, const nlohmann::json& config, const std::string& file)
    : model_(model), config_(config), file_(file) {
  for (size_t i = 0; i < model.tensors.size(); ++i) names_.emplace(model.tensors[i].name, i);
}

TensorRecord* Linking::find(const std::string& name) {
  auto found = names_.find(name);
  return found == names_.end() ? nullptr : &model_.tensors[found->second];
}

TensorRecord* Linking::part(const std::string& name) {
  TensorRecord* record = find(name);
  if (record == nullptr) return nullptr;
  record->role = TensorRole::kScale;
  record->role_from_file = true;
  return record;
}

RecordReading& Linking::mutable_reading(const TensorRecord& record) {
  return model_.readings[static_cast<size_t>(&record - model_.tensors.data())];
}

void Linking::read(const TensorRecord& weight, Link link) { mutable_reading(weight).link = std::move(link); }

void Linking::forget(const TensorRecord& weight) { mutable_reading(weight).link.reset(); }

void Linking::unread(const TensorRecord& weight, std::string scheme) {
  mutable_reading(weight).unread_scheme = std::move(scheme);
}

void Linking::rename(TensorRecord& record, std::string name) {
  const auto index = static_cast<size_t>(&record - model_.tensors.data());
  if (auto old = names_.find(record.name); old != names_.end() && old->second == index) names_.erase(old);
  record.name = std::move(name);
  names_.emplace(record.name, index);
}

}  // namespace precdetect
