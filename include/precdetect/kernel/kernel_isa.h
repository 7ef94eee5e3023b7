#pragma once
/// The instruction sets the CPU statistics kernel has a path for, chosen at run time: the build targets baseline
/// x86-64 (or the machine's baseline elsewhere), and the wider paths are compiled beside it for their instruction set
/// alone (float_passes_avx2.cpp), run only where the CPU says it has them. Every path gives the same statistics bit
/// for bit: each float64 sum adds the same values in the same order, so a scan's output never depends on the
/// instruction set.

#include <string_view>
#include <vector>

namespace precdetect {

enum class KernelIsa {
  kBaseline,  ///< SSE2 on x86-64, plain vector code elsewhere: 128-bit vectors
  kAvx2,      ///< x86-64 with AVX2: 256-bit vectors
};

/// The widest path this CPU runs (cpuid, asked once).
KernelIsa best_kernel_isa();

/// Every path this CPU runs, the baseline first: the tests run each.
std::vector<KernelIsa> supported_kernel_isas();

/// "baseline", "avx2".
std::string_view kernel_isa_name(KernelIsa isa);

}  // namespace precdetect
