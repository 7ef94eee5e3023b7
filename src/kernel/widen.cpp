#include "precdetect/kernel/widen.h"

#include "precdetect/kernel/scalar_stats.h"

namespace precdetect {

const std::vector<float>& decoded_values(DType dtype) {
  auto decode_all = [](DType narrow) {
    uint32_t sign = magnitude_code_count(narrow);  // the sign bit sits just above the magnitude codes
    std::vector<float> values(2 * sign);
    for (uint32_t bits = 0; bits < values.size(); ++bits) {
      auto magnitude = static_cast<float>(code_magnitude(narrow, bits & (sign - 1)));
      values[bits] = bits & sign ? -magnitude : magnitude;
    }
    return values;
  };
  static const std::vector<float> f16 = decode_all(DType::F16), e4m3 = decode_all(DType::F8_E4M3),
                                  e5m2 = decode_all(DType::F8_E5M2);
  return dtype == DType::F16 ? f16 : dtype == DType::F8_E4M3 ? e4m3 : e5m2;
}

}  // namespace precdetect
