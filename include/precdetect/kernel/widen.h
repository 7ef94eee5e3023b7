#pragma once
/// Stored floats widened to float or double, chunk by chunk: every stored value converts exactly, NaN and Inf
/// included (the diff of mixed dtypes, the dequantization of scaled fp8 weights).

#include <bit>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "precdetect/core/dtype.h"
#include "precdetect/kernel/host_values.h"

namespace precdetect {

/// Every value of F16, F8_E4M3 or F8_E5M2, indexed by its stored bits (sign included), as a float: exact.
const std::vector<float>& decoded_values(DType dtype);

/// Element `index` of `data` as its stored bits (any alignment).
template <typename Raw>
Raw load_raw(const std::byte* data, uint64_t index) {
  Raw raw;
  std::memcpy(&raw, data + index * sizeof(Raw), sizeof(Raw));
  return raw;
}

namespace widen_detail {

template <typename T, typename Raw, typename Decode>
void widen_each(const HostValues& values, uint64_t begin, uint64_t count, T* out, Decode decode) {
  for (uint64_t i = 0; i < count; ++i) out[i] = static_cast<T>(decode(load_raw<Raw>(values.data(), begin + i)));
}

}  // namespace widen_detail

/// `count` values of `values` from `begin` on, widened to T (float, or double where either side is F64): every
/// stored float converts exactly, NaN and Inf included.
template <typename T>
void widen(const HostValues& values, uint64_t begin, uint64_t count, T* out) {
  switch (values.dtype()) {
    case DType::F64:
      return widen_detail::widen_each<T, uint64_t>(values, begin, count, out,
                                                   [](uint64_t bits) { return std::bit_cast<double>(bits); });
    case DType::F32:
      return widen_detail::widen_each<T, uint32_t>(values, begin, count, out,
                                                   [](uint32_t bits) { return std::bit_cast<float>(bits); });
    case DType::BF16:
      return widen_detail::widen_each<T, uint16_t>(
          values, begin, count, out, [](uint16_t bits) { return std::bit_cast<float>(uint32_t{bits} << 16); });
    case DType::F16:
      return widen_detail::widen_each<T, uint16_t>(
          values, begin, count, out, [&table = decoded_values(DType::F16)](uint16_t bits) { return table[bits]; });
    case DType::F8_E4M3:
    case DType::F8_E5M2:
      return widen_detail::widen_each<T, uint8_t>(
          values, begin, count, out, [&table = decoded_values(values.dtype())](uint8_t bits) { return table[bits]; });
    default:
      throw std::invalid_argument("widen: not an analyzed floating dtype");
  }
}

}  // namespace precdetect
