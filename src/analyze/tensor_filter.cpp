#include "precdetect/analyze/tensor_filter.h"

namespace precdetect {

bool TensorFilter::selects(const std::string& name) const {
  if (include && !std::regex_search(name, *include)) return false;
  return !(exclude && std::regex_search(name, *exclude));
}

}  // namespace precdetect
