#include "precdetect/analyze/cpu_kernel.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

namespace precdetect {
namespace {

// Magnitude decoders: the sign never matters to the statistics, so each decoder clears it and returns |x|.
float bf16_magnitude(uint16_t raw) { return std::bit_cast<float>(static_cast<uint32_t>(raw & 0x7FFF) << 16); }

float f16_magnitude(uint16_t raw) {
  // Shift exponent and mantissa into float position, then rescale the exponent bias (15 -> 127) with one
  // multiply by 2^112; this also turns fp16 subnormals into the right float normals. Inf/NaN keep all-ones.
  uint32_t shifted = static_cast<uint32_t>(raw & 0x7FFF) << 13;
  float finite = std::bit_cast<float>(shifted) * 0x1p112f;
  float special = std::bit_cast<float>(shifted | 0x7F800000u);
  return (raw & 0x7C00) == 0x7C00 ? special : finite;
}

float f32_magnitude(uint32_t raw) { return std::bit_cast<float>(raw & 0x7FFFFFFFu); }
double f64_magnitude(uint64_t raw) { return std::bit_cast<double>(raw & 0x7FFFFFFFFFFFFFFFull); }

/// 8-bit floats decode through a 128-entry table of magnitudes (sign bit masked off).
using Fp8Table = std::array<float, 128>;

Fp8Table make_fp8_table(int mantissa_bits, int bias, bool ieee_specials) {
  Fp8Table table{};
  for (int code = 0; code < 128; ++code) {
    int exponent = code >> mantissa_bits;
    int mantissa = code & ((1 << mantissa_bits) - 1);
    int max_exponent = (1 << (7 - mantissa_bits)) - 1;
    float fraction = static_cast<float>(mantissa) / static_cast<float>(1 << mantissa_bits);
    if (exponent == 0)
      table[code] = std::ldexp(fraction, 1 - bias);
    else
      table[code] = std::ldexp(1.0f + fraction, exponent - bias);
    if (ieee_specials && exponent == max_exponent)  // E5M2: IEEE-style Inf and NaN
      table[code] = mantissa == 0 ? INFINITY : NAN;
  }
  if (!ieee_specials) table[127] = NAN;  // E4M3 "fn": no Inf, only S.1111.111 is NaN
  return table;
}

const Fp8Table& e4m3_table() {
  static const Fp8Table table = make_fp8_table(3, 7, false);
  return table;
}
const Fp8Table& e5m2_table() {
  static const Fp8Table table = make_fp8_table(2, 15, true);
  return table;
}

auto fp8_decoder(const Fp8Table& table) {
  return [&table](uint8_t raw) { return table[raw & 0x7F]; };
}

/// One pass over [begin, end): independent lanes let the compiler vectorize; lane sums are flushed to the
/// block total every kBlock elements so no float64 accumulator sums more than kBlock / kLanes terms.
template <typename Raw, typename Decode>
TensorStats reduce_range(const Raw* data, size_t begin, size_t end, Decode decode) {
  using Value = decltype(decode(Raw{}));
  constexpr size_t kLanes = 16;
  constexpr size_t kBlock = 1 << 14;
  constexpr Value kInf = std::numeric_limits<Value>::infinity();
  TensorStats total;
  total.numel = end - begin;
  for (size_t block = begin; block < end; block += kBlock) {
    size_t block_end = std::min(end, block + kBlock);
    std::array<Value, kLanes> lo, hi;
    lo.fill(kInf);
    hi.fill(-kInf);
    std::array<double, kLanes> squares{};
    std::array<uint32_t, kLanes> zeros{}, nans{}, infs{};
    for (size_t i = block; i < block_end; ++i) {
      size_t lane = i % kLanes;
      Value a = decode(data[i]);
      bool is_nan = a != a;
      lo[lane] = a < lo[lane] ? a : lo[lane];  // comparisons with NaN are false: NaN never wins
      hi[lane] = a > hi[lane] ? a : hi[lane];
      zeros[lane] += a == 0;
      nans[lane] += is_nan;
      infs[lane] += a == kInf;
      double wide = is_nan ? 0.0 : static_cast<double>(a);
      squares[lane] += wide * wide;  // exact square for every dtype narrower than F64
    }
    for (size_t lane = 0; lane < kLanes; ++lane) {
      total.abs_min = std::fmin(total.abs_min, static_cast<double>(lo[lane]));
      total.abs_max = std::fmax(total.abs_max, static_cast<double>(hi[lane]));
      total.sum_squares += squares[lane];
      total.zeros += zeros[lane];
      total.nans += nans[lane];
      total.infs += infs[lane];
    }
  }
  return total;
}

/// Splits large tensors across the machine's threads; small ones run inline.
template <typename Raw, typename Decode>
TensorStats reduce(const void* data, uint64_t numel, Decode decode) {
  const auto* values = static_cast<const Raw*>(data);
  constexpr uint64_t kMinElementsPerThread = 1 << 20;
  uint64_t threads = std::min<uint64_t>(std::max(1u, std::thread::hardware_concurrency()),
                                        numel / kMinElementsPerThread);
  if (threads <= 1) return reduce_range(values, 0, numel, decode);
  std::vector<std::future<TensorStats>> parts;
  uint64_t chunk = (numel + threads - 1) / threads;
  for (uint64_t begin = chunk; begin < numel; begin += chunk)
    parts.push_back(std::async(std::launch::async, [=] {
      return reduce_range(values, begin, std::min(numel, begin + chunk), decode);
    }));
  TensorStats stats = reduce_range(values, 0, std::min(numel, chunk), decode);
  for (auto& part : parts) stats.merge(part.get());
  return stats;
}

}  // namespace

TensorStats cpu_tensor_stats(const void* data, DType dtype, uint64_t numel) {
  switch (dtype) {
    case DType::F64: return reduce<uint64_t>(data, numel, f64_magnitude);
    case DType::F32: return reduce<uint32_t>(data, numel, f32_magnitude);
    case DType::F16: return reduce<uint16_t>(data, numel, f16_magnitude);
    case DType::BF16: return reduce<uint16_t>(data, numel, bf16_magnitude);
    case DType::F8_E4M3: return reduce<uint8_t>(data, numel, fp8_decoder(e4m3_table()));
    case DType::F8_E5M2: return reduce<uint8_t>(data, numel, fp8_decoder(e5m2_table()));
    default: throw std::invalid_argument("cpu_tensor_stats: not a floating dtype");
  }
}

}  // namespace precdetect
