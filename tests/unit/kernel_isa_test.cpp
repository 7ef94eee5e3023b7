// Every instruction-set path of the CPU kernel (kernel_isa.h) against the float64 references of stats_reference.h
// and against the baseline path bit for bit, on values chosen to break a vector kernel: subnormals, NaN payloads,
// signed zeros, Inf, each dtype's extremes and the narrow formats' boundaries in every lane, every bf16/f16/fp8 code,
// lengths that fill no whole vector, blocks and tails, and misaligned starts.
#include "precdetect/kernel/kernel_isa.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "precdetect/kernel/cpu_kernel.h"
#include "precdetect/kernel/scalar_stats.h"
#include "stats_reference.h"

namespace precdetect {
namespace {

using testing::expect_same_stats;
using testing::random_tensor_bytes;
using testing::reference_stats;
using testing::torch_decoded;

template <typename T>
std::string bytes_of(const std::vector<T>& values) {
  return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)};
}

class KernelPath : public ::testing::TestWithParam<KernelIsa> {
 protected:
  /// This path's statistics of `bytes` as `dtype`, at an aligned start and three misaligned ones: equal to the
  /// reference (the norm to 1e-12) and to the baseline path's bit for bit.
  void expect_exact(const std::string& bytes, DType dtype) const {
    uint64_t numel = bytes.size() / static_cast<size_t>(dtype_bits(dtype) / 8);
    TensorStats expected = reference_stats(torch_decoded(bytes, dtype), dtype);
    TensorStats baseline = cpu_tensor_stats(bytes.data(), dtype, numel, KernelIsa::kBaseline);
    for (size_t offset : {0, 1, 3, 7}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " x " + std::to_string(numel) + " at offset " +
                   std::to_string(offset) + " on " + std::string(kernel_isa_name(GetParam())));
      std::string shifted = std::string(offset, '\0') + bytes;
      TensorStats actual = cpu_tensor_stats(shifted.data() + offset, dtype, numel, GetParam());
      expect_same_stats(actual, expected, 1e-12);
      EXPECT_TRUE(actual == baseline) << "norm " << actual.norm() << " vs the baseline's " << baseline.norm();
    }
  }
};

// Sizes: empty, a partial step, one and more steps with a tail, one value short of a block, a block, past it, and
// large enough to split across threads.
TEST_P(KernelPath, RandomValuesOfEveryDtype) {
  for (DType dtype : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8_E4M3, DType::F8_E5M2})
    for (size_t numel : {0, 1, 7, 8, 9, 17, 16383, 16384, 16391, 40009, 3'000'001})
      expect_exact(random_tensor_bytes(dtype, numel, static_cast<uint32_t>(numel) * 7 + static_cast<uint32_t>(dtype)),
                   dtype);
}

/// The F32 boundaries of every statistic, as bit patterns: zeros, subnormals, NaNs (quiet, signalling, with
/// payloads, with their low 16 bits zero as bf16's are), Inf, the extremes, the narrow formats' limits and the
/// values either side, and precision edges of bf16 and fp16.
std::vector<uint32_t> f32_specials() {
  auto bits = [](float value) { return std::bit_cast<uint32_t>(value); };
  auto after = [](float value) { return std::nextafter(value, INFINITY); };
  auto before = [](float value) { return std::nextafter(value, 0.0f); };
  std::vector<uint32_t> specials = {0x00000000, 0x00000001, 0x00000002, 0x007FFFFF, 0x00400000, 0x00010000,
                                    0x00002000, 0x00800000, 0x7F800000, 0x7FC00000, 0x7F800001, 0x7FBFFFFF,
                                    0x7FFFFFFF, 0x7FC00001, 0x7F810000, 0x7F7FFFFF, 0x7F7F0000, 0x7F000000};
  for (float limit : {100.0f, 448.0f, 57344.0f, 65504.0f, 65520.0f, 65536.0f, 0x1p-14f, 0x1p-24f, 0x1p-126f})
    specials.insert(specials.end(), {bits(limit), bits(after(limit)), bits(before(limit))});
  for (float value : {0x1.8p-24f, 0x1p-25f, 1023 * 0x1p-24f, 0x1p-15f, 3 * 0x1p-24f, 1 + 0x1p-10f, 1 + 0x1p-11f,
                      1 + 0x1p-7f, 1 + 0x1p-8f, 0.02f, 255.0f, 256.0f})
    specials.push_back(bits(value));
  return specials;
}

/// The F64 boundaries: those of F32's that F64 holds exactly, and the values either side of each float32 edge (a
/// double above FLT_MAX that rounds to it or to Inf, below the smallest float subnormal, between two floats).
std::vector<uint64_t> f64_specials() {
  auto bits = [](double value) { return std::bit_cast<uint64_t>(value); };
  auto after = [](double value) { return std::nextafter(value, INFINITY); };
  auto before = [](double value) { return std::nextafter(value, 0.0); };
  std::vector<uint64_t> specials = {0x0,
                                    0x1,
                                    0x000FFFFFFFFFFFFF,
                                    0x0010000000000000,
                                    0x7FF0000000000000,
                                    0x7FF8000000000000,
                                    0x7FF0000000000001,
                                    0x7FF8000000000001,
                                    0x7FFFFFFFFFFFFFFF,
                                    0x7FEFFFFFFFFFFFFF,
                                    0x47EFFFFFF0000000,
                                    0x47EFFFFFE8000000};
  for (double limit : {100.0, 448.0, 57344.0, 65504.0, 0x1p-14, 0x1p-24, 0x1p-126, 0x1p-149, 0x1p-150, 0x1p127, 0x1p128,
                       1e300, static_cast<double>(std::numeric_limits<float>::max())})
    specials.insert(specials.end(), {bits(limit), bits(after(limit)), bits(before(limit))});
  for (double value : {0.1, static_cast<double>(0.1f), 0x1.8p-149, 1 + 0x1p-7, 1 + 0x1p-10, 1 + 0x1p-30, 255.0})
    specials.push_back(bits(value));
  return specials;
}

/// `specials` and their negatives inside normal(0, 0.02) values, eight copies each rotated by one lane: the first
/// across a block's end, the last into the tail of values that fill no step.
template <typename T, typename Bits>
std::string with_specials(const std::vector<Bits>& specials) {
  constexpr Bits kSign = Bits{1} << (8 * sizeof(Bits) - 1);
  size_t n = specials.size();
  std::vector<size_t> starts = {16384 - n / 2};
  for (size_t copy = 1; copy < 8; ++copy) starts.push_back(16384 + copy * (n + 1));
  if ((starts.back() + n) % 8 == 0) starts.back() += 3;
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(0.0, 0.02);
  std::vector<T> values(starts.back() + n);
  for (T& value : values) value = static_cast<T>(normal(rng));
  for (size_t copy = 0; copy < 8; ++copy)
    for (size_t k = 0; k < n; ++k) {
      Bits pattern = specials[(k + copy) % n] ^ ((k + copy) % 2 ? kSign : 0);
      std::memcpy(&values[starts[copy] + k], &pattern, sizeof(T));
    }
  return bytes_of(values);
}

TEST_P(KernelPath, F32Boundaries) { expect_exact(with_specials<float>(f32_specials()), DType::F32); }
TEST_P(KernelPath, F64Boundaries) { expect_exact(with_specials<double>(f64_specials()), DType::F64); }

TEST_P(KernelPath, EveryF32BoundaryAlone) {
  for (uint32_t pattern : f32_specials())
    for (uint32_t sign : {0u, 0x80000000u})
      expect_exact(bytes_of(std::vector<uint32_t>(9, pattern | sign)), DType::F32);
}

TEST_P(KernelPath, EveryF64BoundaryAlone) {
  for (uint64_t pattern : f64_specials())
    for (uint64_t sign : {uint64_t{0}, uint64_t{1} << 63})
      expect_exact(bytes_of(std::vector<uint64_t>(5, pattern | sign)), DType::F64);
}

/// Every stored code of a 16- or 8-bit dtype, shuffled, `copies` times over.
template <typename Code>
std::string every_code(size_t copies) {
  std::vector<Code> codes(copies << (8 * sizeof(Code)));
  std::iota(codes.begin(), codes.end(), Code{0});  // wraps: each code `copies` times
  std::shuffle(codes.begin(), codes.end(), std::mt19937(3));
  return bytes_of(codes);
}

TEST_P(KernelPath, EveryCodeOfEveryNarrowDtype) {
  for (DType dtype : {DType::BF16, DType::F16}) {
    expect_exact(every_code<uint16_t>(1), dtype);  // more values than magnitude codes: bf16 in two tables
    std::string half = every_code<uint16_t>(1);
    expect_exact(half.substr(0, half.size() / 4), dtype);  // fewer: one table
  }
  for (DType dtype : {DType::F8_E4M3, DType::F8_E5M2}) expect_exact(every_code<uint8_t>(3), dtype);
}

INSTANTIATE_TEST_SUITE_P(EveryPathThisCpuRuns, KernelPath, ::testing::ValuesIn(supported_kernel_isas()),
                         [](const auto& info) { return std::string(kernel_isa_name(info.param)); });

// The norms sum in the order the kernel defines, which makes them equal bit for bit on every path and keeps a scan's
// output byte for byte what it was. These models of the order (float_passes.cpp, cpu_kernel.cpp) fail on any
// change to it. One part: below 2^21 values a tensor is never split across threads.

/// F32: per block of 16384 values, value i + k of each step of eight to float64 chain k, the chains added
/// (0, 2), (1, 3), (4, 6), (5, 7) into the total at the block's end; then the values that fill no step, in order.
double f32_sum_in_kernel_order(const std::vector<float>& values) {
  auto square = [](float value) { return std::isnan(value) ? 0.0 : static_cast<double>(value) * value; };
  double total = 0;
  size_t i = 0;
  for (; i + 8 <= values.size();) {
    std::array<double, 8> chains{};
    for (size_t block_end = std::min(values.size(), i + 16384); i + 8 <= block_end; i += 8)
      for (size_t k = 0; k < 8; ++k) chains[k] += square(values[i + k]);
    for (size_t q : {0, 4}) {
      total += chains[q] + chains[q + 2];
      total += chains[q + 1] + chains[q + 3];
    }
  }
  double tail = 0;
  for (; i < values.size(); ++i) tail += square(values[i]);
  return total + tail;
}

/// F64: per block of 16384 values, one chain in value order, added into the total at the block's end.
double f64_sum_in_kernel_order(const std::vector<double>& values) {
  double total = 0;
  for (size_t block = 0; block < values.size(); block += 16384) {
    double chain = 0;
    for (size_t i = block; i < std::min(values.size(), block + 16384); ++i)
      chain += std::isnan(values[i]) ? 0.0 : values[i] * values[i];
    total += chain;
  }
  return total;
}

/// 8- and 16-bit codes: each magnitude's square times its count, in ascending code order.
double code_sum_in_kernel_order(const std::vector<uint16_t>& codes, DType dtype) {
  std::vector<uint64_t> counts(magnitude_code_count(dtype));
  for (uint16_t code : codes) ++counts[code & (counts.size() - 1)];
  double total = 0;
  for (uint32_t code = 0; code < counts.size(); ++code) {
    double magnitude = code_magnitude(dtype, code);
    if (counts[code] != 0 && !std::isnan(magnitude)) total += magnitude * magnitude * static_cast<double>(counts[code]);
  }
  return total;
}

TEST_P(KernelPath, NormsSumInTheKernelsOrder) {
  std::mt19937 rng(11);
  std::lognormal_distribution<double> spread(-4.0, 3.0);  // magnitudes over many binades: every order rounds apart
  for (size_t numel : {5, 40009, 1'500'007}) {
    std::vector<float> f32(numel);
    std::vector<double> f64(numel);
    std::vector<uint16_t> bf16(numel);
    for (size_t i = 0; i < numel; ++i) {
      f64[i] = spread(rng) * (i % 2 ? -1 : 1);
      f32[i] = static_cast<float>(f64[i]);
      bf16[i] = static_cast<uint16_t>(std::bit_cast<uint32_t>(f32[i]) >> 16);
    }
    f32[numel / 2] = NAN;
    EXPECT_EQ(cpu_tensor_stats(f32.data(), DType::F32, numel, GetParam()).sum_squares, f32_sum_in_kernel_order(f32));
    EXPECT_EQ(cpu_tensor_stats(f64.data(), DType::F64, numel, GetParam()).sum_squares, f64_sum_in_kernel_order(f64));
    EXPECT_EQ(cpu_tensor_stats(bf16.data(), DType::BF16, numel, GetParam()).sum_squares,
              code_sum_in_kernel_order(bf16, DType::BF16));
  }
}

TEST(KernelIsa, RunsEveryPathTheCpuHas) {
  std::vector<KernelIsa> isas = supported_kernel_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), KernelIsa::kBaseline);
  EXPECT_EQ(best_kernel_isa(), isas.back());
#if defined(__x86_64__) && defined(__linux__)
  // The CPU's own list, so that a machine with AVX2 cannot skip the AVX2 path's tests unnoticed.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line) && !line.starts_with("flags")) {
  }
  ASSERT_TRUE(line.starts_with("flags")) << "no flags line in /proc/cpuinfo";
  bool avx2 = (line + " ").find(" avx2 ") != std::string::npos;
  EXPECT_EQ(std::count(isas.begin(), isas.end(), KernelIsa::kAvx2), avx2 ? 1 : 0) << line;
#endif
}

}  // namespace
}  // namespace precdetect
