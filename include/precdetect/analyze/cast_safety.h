#pragma once
/// What a cast to a narrower float format would do to a tensor's values (seeds 001, 002): how many overflow,
/// flush to zero, or land among the subnormals and lose precision. Read off the statistics, no second pass.

#include <array>
#include <cstdint>
#include <string_view>

#include "precdetect/kernel/tensor_stats.h"

namespace precdetect {

/// A narrower float format's range, as powers of two and its largest finite value.
struct NarrowFormat {
  std::string_view name;
  double max;                    ///< largest finite value
  int min_normal_exponent;       ///< smallest normal: 2^this
  int min_subnormal_exponent;    ///< smallest subnormal: 2^this
  uint64_t TensorStats::*above;  ///< the statistic counting finite values above `max`
};

inline constexpr std::array<NarrowFormat, 3> kNarrowFormats = {{
    {"fp16", limits::kFp16Max, -14, -24, &TensorStats::above_fp16_max},
    {"fp8_e4m3", limits::kE4m3Max, -6, -9, &TensorStats::above_e4m3_max},
    {"fp8_e5m2", limits::kE5m2Max, -14, -16, &TensorStats::above_e5m2_max},
}};
inline constexpr const NarrowFormat& kFp16Format = kNarrowFormats[0];

/// Finite values a cast to one format would hurt (the format's rounding aside: a value a little above `max`
/// or below the smallest subnormal may round to it; these count what lies outside the range).
struct FormatFit {
  uint64_t overflow = 0;   ///< finite |x| > max: become Inf (or saturate/NaN in fp8 E4M3)
  uint64_t underflow = 0;  ///< 0 < |x| < smallest subnormal: become zero
  uint64_t subnormal = 0;  ///< smallest subnormal <= |x| < smallest normal: keep fewer significant bits
};

FormatFit format_fit(const TensorStats& stats, const NarrowFormat& format);

/// Finite |x| >= 256 = 2^8: x*x >= 65536 overflows fp16 (sums of squares in norms, attention logits).
uint64_t square_overflow(const TensorStats& stats);

}  // namespace precdetect
