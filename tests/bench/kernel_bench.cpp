// The CPU statistics kernel alone: `cpu_tensor_stats` on normal(0, 0.02) values in memory, no file, no start-up.
// Prints the best of --rounds timings in ns per value. Ranges of up to 2^20 values run on one core, larger ones
// are split across all of them. Not a test: build it on request (docs/benchmarks.md).
//   cmake --build build --target precdetect_kernel_bench
//   build/tests/precdetect_kernel_bench --dtype f32 --values 65536 --repeat 2000 [--offset 1]
#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/randn.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "precdetect/cuda/torch_dtype.h"
#include "precdetect/kernel/cpu_kernel.h"

int main(int argc, char** argv) {
  CLI::App app{"Times the CPU statistics kernel on in-memory values"};
  using precdetect::DType;
  const std::map<std::string, DType> dtypes{{"f32", DType::F32}, {"bf16", DType::BF16}, {"f16", DType::F16}};
  DType dtype = DType::F32;
  size_t values = 65536, repeat = 2000, rounds = 15, offset = 0;
  app.add_option("--dtype", dtype, "f32, bf16 or f16")->transform(CLI::CheckedTransformer(dtypes));
  app.add_option("--values", values, "values per call")->check(CLI::PositiveNumber);
  app.add_option("--repeat", repeat, "calls per timing")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "timings; the best is printed")->check(CLI::PositiveNumber);
  app.add_option("--offset", offset, "bytes the values start past an aligned address (misaligned reads)");
  CLI11_PARSE(app, argc, argv);

  at::manual_seed(1);  // normal(0, 0.02): a trained weight's typical spread, stored (rounded) as the dtype
  at::Tensor typed = at::randn({static_cast<int64_t>(values)}).mul_(0.02).to(precdetect::torch_scalar_type(dtype));
  std::vector<std::byte> bytes(offset + typed.nbytes());
  std::memcpy(bytes.data() + offset, typed.data_ptr(), typed.nbytes());
  double best = std::numeric_limits<double>::infinity(), norm = 0;
  for (size_t round = 0; round < rounds; ++round) {
    auto start = std::chrono::steady_clock::now();
    for (size_t call = 0; call < repeat; ++call)
      norm = precdetect::cpu_tensor_stats(bytes.data() + offset, dtype, values).norm();
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count());
  }
  fmt::print("{:.3f} ns per value (best of {} rounds of {} x {} values; norm {:.6g})\n",
             best * 1e9 / static_cast<double>(repeat * values), rounds, repeat, values, norm);
}
