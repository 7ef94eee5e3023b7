#include "precdetect/kernel/kernel_isa.h"

namespace precdetect {

std::vector<KernelIsa> supported_kernel_isas() {
  std::vector<KernelIsa> isas{KernelIsa::kBaseline};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // libgcc's (and compiler-rt's) cpuid check includes the OS's saving of the 256-bit registers (XGETBV).
  if (__builtin_cpu_supports("avx2")) isas.push_back(KernelIsa::kAvx2);
#endif
  return isas;
}

KernelIsa best_kernel_isa() {
  static const KernelIsa kBest = supported_kernel_isas().back();
  return kBest;
}

std::string_view kernel_isa_name(KernelIsa isa) { return isa == KernelIsa::kAvx2 ? "avx2" : "baseline"; }

}  // namespace precdetect
