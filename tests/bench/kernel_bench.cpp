// The CPU statistics kernel alone: `cpu_tensor_stats` on normal(0, 0.02) values in memory, no file, no start-up.
// Prints the best of --rounds timings in ns per value. Ranges of up to 2^20 values run on one core, larger ones
// are split across all of them. Not a test: build it on request (docs/benchmarks.md).
//   cmake --build build --target precdetect_kernel_bench
//   build/tests/precdetect_kernel_bench --dtype f32 --values 65536 --repeat 2000
#include <CLI/CLI.hpp>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "precdetect/analyze/cpu_kernel.h"

namespace {

using precdetect::DType;

/// `count` normal(0, 0.02) values (a trained weight's typical spread) stored as `dtype`.
std::vector<char> normal_values(DType dtype, size_t count) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  size_t width = static_cast<size_t>(precdetect::dtype_bits(dtype) / 8);
  std::vector<char> bytes(count * width);
  for (size_t i = 0; i < count; ++i) {
    float value = normal(rng);
    if (dtype == DType::BF16) {
      c10::BFloat16 stored(value);
      std::memcpy(&bytes[i * width], &stored, width);
    } else if (dtype == DType::F16) {
      c10::Half stored(value);
      std::memcpy(&bytes[i * width], &stored, width);
    } else {
      std::memcpy(&bytes[i * width], &value, width);
    }
  }
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times the CPU statistics kernel on in-memory values"};
  const std::map<std::string, DType> dtypes{{"f32", DType::F32}, {"bf16", DType::BF16}, {"f16", DType::F16}};
  DType dtype = DType::F32;
  size_t values = 65536, repeat = 2000, rounds = 15;
  app.add_option("--dtype", dtype, "f32, bf16 or f16")->transform(CLI::CheckedTransformer(dtypes));
  app.add_option("--values", values, "values per call")->check(CLI::PositiveNumber);
  app.add_option("--repeat", repeat, "calls per timing")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "timings; the best is printed")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  std::vector<char> bytes = normal_values(dtype, values);
  double best = std::numeric_limits<double>::infinity(), norm = 0;
  for (size_t round = 0; round < rounds; ++round) {
    auto start = std::chrono::steady_clock::now();
    for (size_t call = 0; call < repeat; ++call) norm = precdetect::cpu_tensor_stats(bytes.data(), dtype, values).norm();
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count());
  }
  fmt::print("{:.3f} ns per value (best of {} rounds of {} x {} values; norm {:.6g})\n",
             best * 1e9 / static_cast<double>(repeat * values), rounds, repeat, values, norm);
}
