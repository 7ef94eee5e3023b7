#pragma once
/// The CPU kernel's vectors on each of its instruction sets (kernel_isa.h): `BaselineLanes` holds four floats or two
/// doubles (128 bits, float_vectors.h), `Avx2Lanes` eight floats or four doubles (256 bits), each with the few
/// operations whose best form differs between them. The passes' loops (float_pass_loops.h) are templates over one
/// of these. Avx2Lanes' functions are compiled for AVX2 (PRECDETECT_AVX2) and called only from code that is
/// (float_passes_avx2.cpp); they reinterpret vectors by casts, never std::bit_cast, whose instances are compiled for
/// the baseline and cannot take a 256-bit vector.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "precdetect/kernel/float_vectors.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PRECDETECT_HAS_AVX2_PATH 1
#define PRECDETECT_AVX2 __attribute__((target("avx2")))
#endif

namespace precdetect::vectors {

struct BaselineLanes {
  static constexpr size_t kWidth = 4;  ///< floats per vector; half as many doubles
  using Floats = vectors::Floats;
  using Ints = vectors::Ints;
  using Words = vectors::Words;
  using Doubles = vectors::Doubles;
  using Longs = vectors::Longs;
  using LongWords = vectors::LongWords;

  static Floats load_floats(const std::byte* data) { return f32_values(data); }
  static Doubles load_doubles(const std::byte* data) {
    Doubles raw;
    std::memcpy(&raw, data, sizeof(raw));
    return raw;
  }
  /// Lanes [0, kWidth / 2) and [kWidth / 2, kWidth), widened to float64 (exactly).
  static Doubles low_half(Floats values) { return vectors::low_half(values); }
  static Doubles high_half(Floats values) { return vectors::high_half(values); }
  /// Whether each double is a float32 (converted to float and back unchanged; NaN never is).
  static Longs float_exact(Doubles values) {
    return __builtin_convertvector(__builtin_convertvector(values, TwoFloats), Doubles) == values;
  }
  static bool any(Ints mask) { return vectors::any(mask); }
  static bool any(Longs mask) { return (mask[0] | mask[1]) != 0; }
  /// Four doubles (two vectors) as floats, and four 64-bit lane masks as 32-bit ones.
  static Floats narrowed(const std::array<Doubles, 2>& values) {
    return __builtin_shufflevector(__builtin_convertvector(values[0], TwoFloats),
                                   __builtin_convertvector(values[1], TwoFloats), 0, 1, 2, 3);
  }
  static Ints narrowed(const std::array<Longs, 2>& masks) {
    return __builtin_shufflevector(__builtin_convertvector(masks[0], TwoInts),
                                   __builtin_convertvector(masks[1], TwoInts), 0, 1, 2, 3);
  }

 private:
  using TwoFloats = float __attribute__((vector_size(8)));
  using TwoInts = int32_t __attribute__((vector_size(8)));
};

#ifdef PRECDETECT_HAS_AVX2_PATH
struct Avx2Lanes {
  static constexpr size_t kWidth = 8;
  using Floats = float __attribute__((vector_size(32)));
  using Ints = int32_t __attribute__((vector_size(32)));
  using Words = uint32_t __attribute__((vector_size(32)));
  using Doubles = double __attribute__((vector_size(32)));
  using Longs = int64_t __attribute__((vector_size(32)));
  using LongWords = uint64_t __attribute__((vector_size(32)));

  PRECDETECT_AVX2 static Floats load_floats(const std::byte* data) {
    Floats raw;
    std::memcpy(&raw, data, sizeof(raw));
    return raw;
  }
  PRECDETECT_AVX2 static Doubles load_doubles(const std::byte* data) {
    Doubles raw;
    std::memcpy(&raw, data, sizeof(raw));
    return raw;
  }
  // Intrinsics: GCC 12 lowered __builtin_convertvector of a shuffled half into two 128-bit conversions and an insert.
  PRECDETECT_AVX2 static Doubles low_half(Floats values) {
    return (Doubles)_mm256_cvtps_pd(_mm256_castps256_ps128((__m256)values));
  }
  PRECDETECT_AVX2 static Doubles high_half(Floats values) {
    return (Doubles)_mm256_cvtps_pd(_mm256_extractf128_ps((__m256)values, 1));
  }
  PRECDETECT_AVX2 static Longs float_exact(Doubles values) {
    return (Longs)_mm256_cmp_pd(_mm256_cvtps_pd(_mm256_cvtpd_ps((__m256d)values)), (__m256d)values, _CMP_EQ_OQ);
  }
  PRECDETECT_AVX2 static bool any(Ints mask) { return _mm256_testz_si256((__m256i)mask, (__m256i)mask) == 0; }
  PRECDETECT_AVX2 static bool any(Longs mask) { return _mm256_testz_si256((__m256i)mask, (__m256i)mask) == 0; }
  /// Four doubles (one vector) as floats, and four 64-bit lane masks as 32-bit ones.
  PRECDETECT_AVX2 static vectors::Floats narrowed(const std::array<Doubles, 1>& values) {
    return (vectors::Floats)_mm256_cvtpd_ps((__m256d)values[0]);
  }
  PRECDETECT_AVX2 static vectors::Ints narrowed(const std::array<Longs, 1>& masks) {
    return __builtin_convertvector(masks[0], vectors::Ints);
  }
};
#endif

}  // namespace precdetect::vectors
