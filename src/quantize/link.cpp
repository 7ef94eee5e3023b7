#include "precdetect/quantize/link.h"

#include "precdetect/quantize/scheme.h"

namespace precdetect {

std::string Link::key() const {
  std::string key(scheme_->name);
  link_fields::append(key, key.size());  // the scheme's name, then its parts: neither runs into the other
  return key + '|' + parts_->fields_key();
}

nlohmann::ordered_json scaled_by_json(const std::string& scale, std::optional<std::pair<int64_t, int64_t>> block) {
  return {{"tensor", scale},
          {"block", block ? nlohmann::ordered_json({block->first, block->second}) : nlohmann::ordered_json(nullptr)}};
}

nlohmann::ordered_json part_json(const PartName& part) {
  return part.name.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(part.name);
}

}  // namespace precdetect
