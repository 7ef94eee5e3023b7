// The integer formats' table rounding against c10's own float16 and bfloat16 conversions (what a dequantizing
// kernel's cast computes), one float at a time, as table magnitudes and in place, four at a time.
#include "precdetect/quantize/narrow_rounding.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace precdetect {
namespace {

/// Floats every rounding case meets: each exponent's ties and neighbours of ties, float16's and bfloat16's
/// overflow and subnormal edges, zeros, infinities, NaNs with high and low payloads, and random patterns.
std::vector<float> samples() {
  std::vector<uint32_t> bits = {0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF};
  for (uint32_t exponent = 0; exponent < 256; ++exponent)
    for (uint32_t low :
         {0x0u, 0x1u, 0xFFFu, 0x1000u, 0x1001u, 0x1FFFu, 0x2000u, 0x7FFFu, 0x8000u, 0x8001u, 0x18000u, 0x7FFFFFu})
      for (uint32_t sign : {0x0u, 0x80000000u}) bits.push_back(sign | exponent << 23 | low);
  std::mt19937 generator(7);
  for (int i = 0; i < 1 << 20; ++i) bits.push_back(generator());
  for (float edge : {65504.0F, 65519.99F, 65520.0F, 0x1p-24F, 0x1p-25F, 0x1.8p-25F, 0x1p-14F, 3.3895e38F})
    bits.push_back(std::bit_cast<uint32_t>(edge));
  std::vector<float> floats;
  floats.reserve(bits.size());
  for (uint32_t pattern : bits) floats.push_back(std::bit_cast<float>(pattern));
  return floats;
}

template <DType kResult>
uint16_t c10_bits(float value) {
  if constexpr (kResult == DType::F16)
    return c10::Half(value).x;
  else
    return c10::BFloat16(value).x;
}

/// `narrow(values, count, out)`: narrow_magnitudes<kResult> or one of its ways.
template <DType kResult, typename Narrow>
void expect_rounds_as_c10(Narrow narrow) {
  const std::vector<float> floats = samples();
  std::vector<uint16_t> many_at_a_time(floats.size());
  narrow(floats.data(), floats.size(), many_at_a_time.data());
  for (size_t i = 0; i < floats.size(); ++i) {
    const uint16_t expected = c10_bits<kResult>(floats[i]);
    ASSERT_EQ(narrow_value<kResult>(floats[i]), expected) << std::hexfloat << floats[i];
    ASSERT_EQ(many_at_a_time[i], expected & 0x7FFF) << std::hexfloat << floats[i] << " at " << i;
  }
}

/// `round(values, count)`: round_in_place<kResult> or one of its ways.
template <DType kResult, typename Round>
void expect_rounds_in_place_as_c10(Round round) {
  std::vector<float> floats = samples();
  const std::vector<float> original = floats;
  round(floats.data(), floats.size());
  for (size_t i = 0; i < floats.size(); ++i) {
    const float expected = kResult == DType::F16 ? static_cast<float>(c10::Half(original[i]))
                                                 : static_cast<float>(c10::BFloat16(original[i]));
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(floats[i])) << std::hexfloat << original[i];
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(floats[i]), std::bit_cast<uint32_t>(expected)) << std::hexfloat << original[i];
    }
  }
}

TEST(NarrowRounding, Float16AsC10Half) {
  expect_rounds_as_c10<DType::F16>(narrow_magnitudes<DType::F16>);
  expect_rounds_as_c10<DType::F16>(narrow_magnitudes_by_bits<DType::F16>);
}

TEST(NarrowRounding, Float16InPlaceAsC10Half) {
  expect_rounds_in_place_as_c10<DType::F16>(round_in_place<DType::F16>);
  expect_rounds_in_place_as_c10<DType::F16>(round_in_place_by_bits<DType::F16>);
}

TEST(NarrowRounding, Float16ByTheCpuAsC10Half) {
  if (!cpu_converts_halves()) GTEST_SKIP() << "this CPU has no F16C conversions";
  expect_rounds_as_c10<DType::F16>(half_magnitudes_by_cpu);
  expect_rounds_in_place_as_c10<DType::F16>(round_to_half_in_place_by_cpu);
  // Counts that leave a remainder past the last eight (rounded one by one), and none: the entries past `count`
  // are left as they were.
  const std::vector<float> floats = samples();
  for (size_t count = 0; count <= 17; ++count) {
    std::vector<uint16_t> out(18, 0xFFFF);
    half_magnitudes_by_cpu(floats.data() + 100, count, out.data());
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_EQ(out[i], i < count ? c10_bits<DType::F16>(floats[100 + i]) & 0x7FFF : 0xFFFF) << count << " " << i;
  }
}

TEST(NarrowRounding, BFloat16InPlaceAsC10BFloat16) {
  expect_rounds_in_place_as_c10<DType::BF16>(round_in_place<DType::BF16>);
}
TEST(NarrowRounding, BFloat16AsC10BFloat16) { expect_rounds_as_c10<DType::BF16>(narrow_magnitudes<DType::BF16>); }

}  // namespace
}  // namespace precdetect
