#include "precdetect/analyze/cpu_kernel.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "precdetect/analyze/float_vectors.h"
#include "precdetect/core/parallel.h"

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

/// Scalar per-lane accumulators of one block, for F64 tensors and the vector path's tail.
template <typename Value, size_t kLanes>
struct Lanes {
  static constexpr Value kInf = std::numeric_limits<Value>::infinity();
  std::array<Value, kLanes> lo, hi;
  std::array<double, kLanes> squares{};
  std::array<uint32_t, kLanes> zeros{}, nans{}, infs{};
  Lanes() {
    lo.fill(kInf);
    hi.fill(-kInf);
  }
  void add(size_t lane, Value a) {
    bool is_nan = a != a;
    lo[lane] = a < lo[lane] ? a : lo[lane];  // comparisons with NaN are false: NaN never wins
    hi[lane] = a > hi[lane] ? a : hi[lane];
    zeros[lane] += a == 0;
    nans[lane] += is_nan;
    infs[lane] += a == kInf;
    double wide = is_nan ? 0.0 : static_cast<double>(a);
    squares[lane] += wide * wide;  // exact square for every dtype narrower than F64
  }
  void flush_into(TensorStats& total) const {
    for (size_t lane = 0; lane < kLanes; ++lane) {
      total.abs_min = std::fmin(total.abs_min, static_cast<double>(lo[lane]));
      total.abs_max = std::fmax(total.abs_max, static_cast<double>(hi[lane]));
      total.sum_squares += squares[lane];
      total.zeros += zeros[lane];
      total.nans += nans[lane];
      total.infs += infs[lane];
    }
  }
};

using vectors::Doubles, vectors::Floats, vectors::Ints, vectors::kWidth;

Floats bf16_magnitudes(const uint16_t* data) { return vectors::magnitudes(vectors::bf16_values(data)); }
Floats f32_magnitudes(const uint32_t* data) { return vectors::magnitudes(vectors::f32_values(data)); }

auto fp8_magnitudes(const Fp8Table& table) {
  return [&table](const uint8_t* data) {
    Floats out;
    for (size_t i = 0; i < kWidth; ++i) out[i] = table[data[i] & 0x7F];
    return out;
  };
}

/// Vector accumulators for float-valued dtypes: the same statistics as Lanes, kWidth at a time.
struct FloatVectorLanes {
  static constexpr float kInf = std::numeric_limits<float>::infinity();
  Floats lo = Floats{} + kInf, hi = Floats{} - kInf;
  Ints zeros{}, nans{}, infs{};
  Doubles squares_low{}, squares_high{};

  void add(Floats a) {
    Ints is_nan = a != a;
    lo = a < lo ? a : lo;  // comparisons with NaN are false: NaN never wins
    hi = a > hi ? a : hi;
    zeros -= a == 0;
    nans -= is_nan;
    infs -= a == kInf;
    Floats kept = std::bit_cast<Floats>(std::bit_cast<Ints>(a) & ~is_nan);  // NaN -> +0 for the sum of squares
    Doubles low = vectors::low_half(kept), high = vectors::high_half(kept);
    squares_low += low * low;  // exact: a float's square fits a double
    squares_high += high * high;
  }
  void flush_into(TensorStats& total) const {
    for (size_t i = 0; i < kWidth; ++i) {
      total.abs_min = std::fmin(total.abs_min, static_cast<double>(lo[i]));
      total.abs_max = std::fmax(total.abs_max, static_cast<double>(hi[i]));
      total.zeros += static_cast<uint64_t>(zeros[i]);
      total.nans += static_cast<uint64_t>(nans[i]);
      total.infs += static_cast<uint64_t>(infs[i]);
    }
    for (size_t i = 0; i < kWidth / 2; ++i) total.sum_squares += squares_low[i] + squares_high[i];
  }
};

constexpr size_t kBlock = 1 << 14;  // flush interval: bounds float64 summation error and int32 counts

/// One pass over [begin, end) for float-valued dtypes: `decode_vector` turns kWidth stored values into magnitudes;
/// the scalar `decode` finishes the tail.
template <typename Raw, typename DecodeVector, typename Decode>
TensorStats reduce_range_vector(const Raw* data, size_t begin, size_t end, DecodeVector decode_vector, Decode decode) {
  TensorStats total;
  total.numel = end - begin;
  size_t i = begin;
  while (i + 2 * kWidth <= end) {
    // Two accumulator sets: their float64 adds form two independent dependency chains.
    FloatVectorLanes even, odd;
    size_t block_end = std::min(end, i + kBlock);
    for (; i + 2 * kWidth <= block_end; i += 2 * kWidth) {
      even.add(decode_vector(data + i));
      odd.add(decode_vector(data + i + kWidth));
    }
    even.flush_into(total);
    odd.flush_into(total);
  }
  Lanes<float, 2 * kWidth> tail;
  for (size_t lane = 0; i < end; ++i, ++lane) tail.add(lane, decode(data[i]));
  tail.flush_into(total);
  return total;
}

/// One pass over [begin, end), scalar: F64 tensors (rare; their squares need no widening).
template <typename Raw, typename Decode>
TensorStats reduce_range(const Raw* data, size_t begin, size_t end, Decode decode) {
  using Value = decltype(decode(Raw{}));
  TensorStats total;
  total.numel = end - begin;
  for (size_t block = begin; block < end; block += kBlock) {
    size_t block_end = std::min(end, block + kBlock);
    Lanes<Value, 16> lanes;
    for (size_t i = block; i < block_end; ++i) lanes.add(i % 16, decode(data[i]));
    lanes.flush_into(total);
  }
  return total;
}

// Large tensors are split across the cores; below a million elements per core a thread costs more than it saves.
constexpr uint64_t kMinElementsPerThread = 1 << 20;

template <typename Raw, typename DecodeVector, typename Decode>
TensorStats reduce_floats(const void* data, uint64_t numel, DecodeVector decode_vector, Decode decode) {
  const auto* values = static_cast<const Raw*>(data);
  return reduce_in_parallel(numel, kMinElementsPerThread, [=](uint64_t begin, uint64_t end) {
    return reduce_range_vector(values, begin, end, decode_vector, decode);
  });
}

}  // namespace

TensorStats cpu_tensor_stats(const void* data, DType dtype, uint64_t numel) {
  switch (dtype) {
    case DType::F64: {
      const auto* values = static_cast<const uint64_t*>(data);
      return reduce_in_parallel(numel, kMinElementsPerThread, [=](uint64_t begin, uint64_t end) {
        return reduce_range(values, begin, end, [](uint64_t raw) { return f64_magnitude(raw); });
      });
    }
    // Lambdas, not function pointers: each instantiation then inlines its decoder into the loop.
    case DType::F32:
      return reduce_floats<uint32_t>(
          data, numel, [](const uint32_t* p) { return f32_magnitudes(p); },
          [](uint32_t raw) { return f32_magnitude(raw); });
    case DType::F16:
      return reduce_floats<uint16_t>(
          data, numel, [](const uint16_t* p) { return vectors::f16_magnitudes(p); },
          [](uint16_t raw) { return f16_magnitude(raw); });
    case DType::BF16:
      return reduce_floats<uint16_t>(
          data, numel, [](const uint16_t* p) { return bf16_magnitudes(p); },
          [](uint16_t raw) { return bf16_magnitude(raw); });
    case DType::F8_E4M3:
      return reduce_floats<uint8_t>(data, numel, fp8_magnitudes(e4m3_table()), fp8_decoder(e4m3_table()));
    case DType::F8_E5M2:
      return reduce_floats<uint8_t>(data, numel, fp8_magnitudes(e5m2_table()), fp8_decoder(e5m2_table()));
    default:
      throw std::invalid_argument("cpu_tensor_stats: not a floating dtype");
  }
}

}  // namespace precdetect
