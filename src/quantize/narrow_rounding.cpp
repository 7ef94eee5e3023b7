#include "precdetect/quantize/narrow_rounding.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace precdetect {
namespace {

/// `x` rounded to nearest even in a binary format of `mantissa_bits` stored bits whose normals start at
/// 2^min_exponent, overflowing past `max` to infinity.
double round_to_format(double x, int mantissa_bits, int min_exponent, double max) {
  if (!std::isfinite(x) || x == 0) return x;
  int exponent = 0;
  std::frexp(x, &exponent);  // |x| in [2^(exponent-1), 2^exponent)
  double ulp = std::ldexp(1.0, std::max(exponent - 1, min_exponent) - mantissa_bits);
  double rounded = std::nearbyint(x / ulp) * ulp;
  return std::fabs(rounded) > max ? std::copysign(HUGE_VAL, x) : rounded;
}

}  // namespace

double rounded_to(DType dtype, double x) {
  switch (dtype) {
    case DType::F16:
      return round_to_format(x, 10, -14, 65504.0);
    case DType::BF16:
      return round_to_format(x, 7, -126, std::ldexp(255.0, 120));
    default:
      return static_cast<float>(x);
  }
}

#if defined(__x86_64__)
bool cpu_has_half_conversions() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  constexpr unsigned kNeeded = bit_OSXSAVE | bit_AVX | bit_F16C;
  if ((ecx & kNeeded) != kNeeded) return false;
  unsigned low = 0, high = 0;
  __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));  // XCR0: the OS saves the SSE and AVX registers
  return (low & 0x6U) == 0x6U;
}

// F16C's conversions round to nearest even (the immediate says so, whatever MXCSR holds) and keep subnormals, as
// c10::Half's bit operations do; only NaN's payload differs, which half_magnitudes_by_cpu sets to c10's 0x7E00.
constexpr int kNearestEven = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// Four at a time: the tables' products are stored four at a time just before, and a load of eight would wait for
// both stores to reach the cache rather than take them from the store buffer.
[[gnu::target("avx,f16c")]] void half_magnitudes_by_cpu(const float* values, size_t count, uint16_t* out) {
  const __m128i magnitude = _mm_set1_epi16(0x7FFF), quiet_nan = _mm_set1_epi16(0x7E00);
  size_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const __m128 four = _mm_loadu_ps(values + i);
    const __m128i nan = _mm_castps_si128(_mm_cmpunord_ps(four, four));
    const __m128i halves = _mm_blendv_epi8(_mm_cvtps_ph(four, kNearestEven), quiet_nan, _mm_packs_epi32(nan, nan));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i), _mm_and_si128(halves, magnitude));
  }
  for (; i < count; ++i) out[i] = half_bits(values[i]) & 0x7FFFU;
}

[[gnu::target("avx,f16c")]] void round_to_half_in_place_by_cpu(float* values, size_t count) {
  size_t i = 0;
  for (; i + 4 <= count; i += 4)
    _mm_storeu_ps(values + i, _mm_cvtph_ps(_mm_cvtps_ph(_mm_loadu_ps(values + i), kNearestEven)));
  for (; i < count; ++i) values[i] = static_cast<float>(rounded_to(DType::F16, values[i]));
}
#else
bool cpu_has_half_conversions() { return false; }
void half_magnitudes_by_cpu(const float* values, size_t count, uint16_t* out) {
  narrow_magnitudes_by_bits<DType::F16>(values, count, out);
}
void round_to_half_in_place_by_cpu(float* values, size_t count) { round_in_place_by_bits<DType::F16>(values, count); }
#endif

}  // namespace precdetect
