#pragma once
/// Four floats at a time through GCC/Clang vector extensions: plain C++ that the compiler maps onto SSE2
/// registers (or AVX2), with no intrinsics to maintain. Shared by the scan and diff kernels, with decoders from
/// each stored 16- and 32-bit float dtype. Comparisons yield all-ones lanes (-1), so subtracting a mask counts.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

// These vector types never cross a library boundary, so GCC's note that their ABI depends on -mavx is moot.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace precdetect::vectors {

using Floats = float __attribute__((vector_size(16)));
using Ints = int32_t __attribute__((vector_size(16)));
using Words = uint32_t __attribute__((vector_size(16)));
using Doubles = double __attribute__((vector_size(16)));
using Longs = int64_t __attribute__((vector_size(16)));
using LongWords = uint64_t __attribute__((vector_size(16)));
constexpr size_t kWidth = 4;  ///< Floats per vector

using HalfWords = uint16_t __attribute__((vector_size(8)));

/// Asks for the cache line `kPrefetchBytes` past `at`, into every level. A tensor read from memory (a hot page
/// cache, not a cache of the core's) streams through loops that count codes or exponents in tables: their loads and
/// stores of counts fill the core's buffers, so the hardware prefetcher's requests run too few lines ahead, and
/// each line waits on memory. 2 KB ahead tripled bf16's rate (docs/benchmarks.md, "The scan at read() speed").
/// A prefetch never faults: past the end of the values it asks for nothing the program reads.
constexpr size_t kPrefetchBytes = 2048;
inline void prefetch_ahead(const std::byte* at) { __builtin_prefetch(at + kPrefetchBytes); }

// The loaders read at any alignment (memcpy): the scan kernel reads values in place in a mapped file, where
// formats such as .npz and Flax msgpack leave them at arbitrary offsets.

/// Value `i` of the `T`s stored at `data`.
template <typename T>
T load(const void* data, size_t i) {
  T value;
  std::memcpy(&value, static_cast<const std::byte*>(data) + i * sizeof(T), sizeof(T));
  return value;
}

/// Four stored 16-bit values, widened to 32 bits.
inline Words load_16bit(const void* data) {
  HalfWords raw;
  std::memcpy(&raw, data, sizeof(raw));
  return __builtin_convertvector(raw, Words);
}

/// Four stored 32-bit values.
inline Words load_32bit(const void* data) {
  Words raw;
  std::memcpy(&raw, data, sizeof(raw));
  return raw;
}

inline Floats bf16_values(const void* data) { return std::bit_cast<Floats>(load_16bit(data) << 16); }

/// The magnitudes of four float16 values held in the low halves of words.
inline Floats f16_magnitudes(Words halves) {
  // Shift exponent and mantissa into float position, then rescale the exponent bias (15 -> 127) with one
  // multiply by 2^112; this also turns fp16 subnormals into the right float normals. Inf/NaN keep all-ones.
  Words shifted = (halves & 0x7FFF) << 13;
  Floats finite = std::bit_cast<Floats>(shifted) * 0x1p112f;
  Floats special = std::bit_cast<Floats>(shifted | 0x7F800000u);
  return (shifted & 0x0F800000u) == 0x0F800000u ? special : finite;
}

inline Floats f16_magnitudes(const void* data) { return f16_magnitudes(load_16bit(data)); }

inline Floats f16_values(const void* data) {
  Words sign = (load_16bit(data) & 0x8000) << 16;
  return std::bit_cast<Floats>(std::bit_cast<Words>(f16_magnitudes(data)) | sign);
}

inline Floats f32_values(const void* data) { return std::bit_cast<Floats>(load_32bit(data)); }

inline Floats magnitudes(Floats values) { return std::bit_cast<Floats>(std::bit_cast<Words>(values) & 0x7FFFFFFFu); }
inline Doubles magnitudes(Doubles values) {
  return std::bit_cast<Doubles>(std::bit_cast<LongWords>(values) & 0x7FFFFFFFFFFFFFFFull);
}

/// Lanes 0-1 and 2-3 of four floats, widened to float64 (exactly). Both convert all four lanes and keep two: GCC
/// 12 lowers that to one cvtps2pd each, where converting a shuffled pair became two scalar conversions and a
/// shuffle inside the kernels' loops.
using Doubles4 = double __attribute__((vector_size(32)));
inline Doubles low_half(Floats values) {
  Doubles4 all = __builtin_convertvector(values, Doubles4);
  return Doubles{all[0], all[1]};
}
inline Doubles high_half(Floats values) {
  Doubles4 all = __builtin_convertvector(values, Doubles4);
  return Doubles{all[2], all[3]};
}

/// Whether any lane of a comparison mask is set, in registers (a 128-bit integer view goes through memory on SSE2).
inline bool any(Ints mask) {
  mask |= __builtin_shufflevector(mask, mask, 2, 3, 0, 1);
  mask |= __builtin_shufflevector(mask, mask, 1, 0, 3, 2);
  return mask[0] != 0;
}

}  // namespace precdetect::vectors
