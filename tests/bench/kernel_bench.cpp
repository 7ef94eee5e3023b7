// The CPU statistics kernel alone: `cpu_tensor_stats` on normal(0, 0.02) values in memory (fp8: scaled by 448 and
// clamped, as fp8 checkpoints store weights), no file, no start-up, on one instruction set's path (kernel_isa.h;
// the CPU's best by default). Prints the best of --rounds timings in ns per value. Ranges of up to 2^20 values run
// on one core, larger ones are split across all of them; the CPU time is every thread's. Not a test: build it on
// request (docs/benchmarks.md).
//   cmake --build build --target precdetect_kernel_bench
//   build/tests/precdetect_kernel_bench --dtype f32 --values 65536 --repeat 2000 [--offset 1] [--isa baseline]
#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/randn.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "precdetect/cuda/torch_dtype.h"
#include "precdetect/kernel/cpu_kernel.h"

int main(int argc, char** argv) {
  CLI::App app{"Times the CPU statistics kernel on in-memory values"};
  using precdetect::DType;
  using precdetect::KernelIsa;
  const std::map<std::string, DType> dtypes{{"f64", DType::F64}, {"f32", DType::F32},      {"bf16", DType::BF16},
                                            {"f16", DType::F16}, {"e4m3", DType::F8_E4M3}, {"e5m2", DType::F8_E5M2}};
  std::map<std::string, KernelIsa> isas;
  for (KernelIsa isa : precdetect::supported_kernel_isas()) isas.emplace(precdetect::kernel_isa_name(isa), isa);
  DType dtype = DType::F32;
  KernelIsa isa = precdetect::best_kernel_isa();
  size_t values = 65536, repeat = 2000, rounds = 15, offset = 0;
  app.add_option("--dtype", dtype, "f64, f32, bf16, f16, e4m3 or e5m2")->transform(CLI::CheckedTransformer(dtypes));
  app.add_option("--isa", isa, "the kernel's path: one this CPU runs")->transform(CLI::CheckedTransformer(isas));
  app.add_option("--values", values, "values per call")->check(CLI::PositiveNumber);
  app.add_option("--repeat", repeat, "calls per timing")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "timings; the best is printed")->check(CLI::PositiveNumber);
  app.add_option("--offset", offset, "bytes the values start past an aligned address (misaligned reads)");
  CLI11_PARSE(app, argc, argv);

  at::manual_seed(1);  // normal(0, 0.02): a trained weight's typical spread, stored (rounded) as the dtype
  at::Tensor weights =
      at::randn({static_cast<int64_t>(values)}, dtype == DType::F64 ? at::kDouble : at::kFloat).mul_(0.02);
  if (dtype == DType::F8_E4M3 || dtype == DType::F8_E5M2) weights = weights.clamp_(-1, 1).mul_(448);
  at::Tensor typed = weights.to(precdetect::torch_scalar_type(dtype));
  std::vector<std::byte> bytes(offset + typed.nbytes());
  std::memcpy(bytes.data() + offset, typed.data_ptr(), typed.nbytes());
  // Wall time, and the process's CPU time (every thread's): on a machine shared with other work the CPU time says
  // what the kernel costs, the wall time what else ran.
  auto cpu_seconds = [] { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; };
  double best = std::numeric_limits<double>::infinity(), best_cpu = best, norm = 0;
  for (size_t round = 0; round < rounds; ++round) {
    auto start = std::chrono::steady_clock::now();
    double cpu_start = cpu_seconds();
    for (size_t call = 0; call < repeat; ++call)
      norm = precdetect::cpu_tensor_stats(bytes.data() + offset, dtype, values, isa).norm();
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count());
    best_cpu = std::min(best_cpu, cpu_seconds() - cpu_start);
  }
  double calls = static_cast<double>(repeat * values) / 1e9;
  fmt::print("{:.3f} ns per value, {:.3f} ns of CPU (best of {} rounds of {} x {} values, {} path; norm {:.6g})\n",
             best / calls, best_cpu / calls, rounds, repeat, values, precdetect::kernel_isa_name(isa), norm);
}
