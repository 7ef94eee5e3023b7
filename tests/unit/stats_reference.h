#pragma once
// Independent references for the statistics kernels: values decoded by libtorch (not by our decoders) and
// reduced in long double.

#include <ATen/core/Tensor.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/tensor.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "precdetect/core/dtype.h"
#include "precdetect/cuda/torch_dtype.h"
#include "precdetect/kernel/tensor_stats.h"

namespace precdetect::testing {

/// Stored bytes of `numel` elements of `dtype`: random bit patterns for dtypes up to 16 bits (every
/// subnormal, Inf and NaN encoding occurs), and for F32/F64 normal values with planted zeros, NaN, Inf and
/// subnormals.
inline std::string random_tensor_bytes(DType dtype, size_t numel, uint32_t seed) {
  std::mt19937_64 rng(seed);
  size_t width = static_cast<size_t>(dtype_bits(dtype) / 8);
  std::string bytes(numel * width, '\0');
  if (width <= 2) {
    for (char& b : bytes) b = static_cast<char>(rng() & 0xFF);
    return bytes;
  }
  std::normal_distribution<double> normal(0.0, 3.0);
  for (size_t i = 0; i < numel; ++i) {
    double value = normal(rng);
    switch (rng() % 16) {
      case 0:
        value = 0.0;
        break;
      case 1:
        value = NAN;
        break;
      case 2:
        value = (rng() & 1) ? INFINITY : -INFINITY;
        break;
      case 3:
        value = dtype == DType::F32 ? 3e-42 * (1 + rng() % 100) : 4e-320 * (1 + rng() % 100);
        break;
      case 4:
        value *= 1e30;
        break;
      default:
        break;
    }
    if (dtype == DType::F32) {
      float narrow = static_cast<float>(value);
      std::memcpy(bytes.data() + i * 4, &narrow, 4);
    } else {
      std::memcpy(bytes.data() + i * 8, &value, 8);
    }
  }
  return bytes;
}

/// The values decoded by libtorch, as float64.
inline std::vector<double> torch_decoded(const std::string& bytes, DType dtype) {
  int64_t numel = static_cast<int64_t>(bytes.size() / static_cast<size_t>(dtype_bits(dtype) / 8));
  auto options = at::TensorOptions().dtype(torch_scalar_type(dtype));
  at::Tensor wide = at::from_blob(const_cast<char*>(bytes.data()), {numel}, options).to(at::kDouble).contiguous();
  return {wide.data_ptr<double>(), wide.data_ptr<double>() + numel};
}

/// Values of `values` (float64) that survive a round trip through `narrow` unchanged, by libtorch's casts.
inline uint64_t count_exact_in(const std::vector<double>& values, at::ScalarType narrow) {
  at::Tensor wide = at::tensor(values, at::kDouble);
  return static_cast<uint64_t>(wide.to(narrow).to(at::kDouble).eq(wide).sum().item<int64_t>());  // NaN != NaN
}

/// The statistics as defined (NaN ignored by min, max and norm), summed in long double; exponents by frexp,
/// exactness (counted for F32/F64 only) by libtorch's casts.
inline TensorStats reference_stats(const std::vector<double>& values, DType dtype) {
  TensorStats stats{.numel = values.size()};
  long double squares = 0;
  for (double value : values) {
    double magnitude = std::fabs(value);
    if (std::isnan(magnitude)) {
      ++stats.nans;
      continue;
    }
    stats.zeros += magnitude == 0;
    stats.infs += std::isinf(magnitude);
    stats.abs_min = std::min(stats.abs_min, magnitude);
    stats.abs_max = std::max(stats.abs_max, magnitude);
    squares += static_cast<long double>(magnitude) * magnitude;
    if (magnitude == 0 || std::isinf(magnitude)) continue;
    int exponent = 0;
    std::frexp(magnitude, &exponent);  // magnitude = m * 2^exponent, m in [0.5, 1)
    stats.exponents.counts[std::clamp(exponent - 1 + 127, 0, 255)]++;
    stats.above_1e2 += magnitude > 100.0;
    stats.above_e4m3_max += magnitude > 448.0;
    stats.above_e5m2_max += magnitude > 57344.0;
    stats.above_fp16_max += magnitude > 65504.0;
  }
  stats.sum_squares = static_cast<double>(squares);
  if (dtype == DType::F32 || dtype == DType::F64) {
    stats.bf16_exact = count_exact_in(values, at::kBFloat16);
    stats.fp16_exact = count_exact_in(values, at::kHalf);
    stats.exactness_checked = stats.numel - stats.nans;
  }
  return stats;
}

/// Counts and magnitudes exactly, the norm to `norm_tolerance` relative (both infinite counts as equal).
inline void expect_same_stats(const TensorStats& actual, const TensorStats& expected, double norm_tolerance) {
  EXPECT_EQ(actual.numel, expected.numel);
  EXPECT_EQ(actual.zeros, expected.zeros);
  EXPECT_EQ(actual.nans, expected.nans);
  EXPECT_EQ(actual.infs, expected.infs);
  ASSERT_EQ(actual.has_values(), expected.has_values());
  if (expected.has_values()) {
    EXPECT_EQ(actual.abs_min, expected.abs_min);
    EXPECT_EQ(actual.abs_max, expected.abs_max);
  }
  EXPECT_EQ(actual.above_1e2, expected.above_1e2);
  EXPECT_EQ(actual.above_e4m3_max, expected.above_e4m3_max);
  EXPECT_EQ(actual.above_e5m2_max, expected.above_e5m2_max);
  EXPECT_EQ(actual.above_fp16_max, expected.above_fp16_max);
  EXPECT_EQ(actual.bf16_exact, expected.bf16_exact);
  EXPECT_EQ(actual.fp16_exact, expected.fp16_exact);
  EXPECT_EQ(actual.exactness_checked, expected.exactness_checked);
  EXPECT_EQ(actual.exponents.counts, expected.exponents.counts);
  if (std::isinf(expected.sum_squares))
    EXPECT_TRUE(std::isinf(actual.sum_squares));
  else
    EXPECT_NEAR(actual.norm(), expected.norm(), norm_tolerance * expected.norm());
}

}  // namespace precdetect::testing
