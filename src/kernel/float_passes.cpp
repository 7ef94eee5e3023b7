#include "precdetect/kernel/float_passes.h"

#include "precdetect/kernel/float_pass_loops.h"

namespace precdetect {
namespace {

/// `L`'s F32 pass, with or without the exactness counts.
template <class L>
TensorStats f32_on(const std::byte* data, size_t begin, size_t end, Exactness exactness) {
  return exactness == Exactness::kCounted ? reduce_floats<L, Exactness::kCounted>(data, begin, end)
                                          : reduce_floats<L, Exactness::kSkipped>(data, begin, end);
}

}  // namespace

TensorStats f32_pass(KernelIsa isa, const std::byte* data, size_t begin, size_t end, Exactness exactness) {
#ifdef PRECDETECT_HAS_AVX2_PATH
  if (isa == KernelIsa::kAvx2) return avx2_path::f32_pass(data, begin, end, exactness);
#endif
  return f32_on<vectors::BaselineLanes>(data, begin, end, exactness);
}

TensorStats f64_pass(KernelIsa isa, const std::byte* data, size_t begin, size_t end) {
#ifdef PRECDETECT_HAS_AVX2_PATH
  if (isa == KernelIsa::kAvx2) return avx2_path::f64_pass(data, begin, end);
#endif
  return reduce_doubles<vectors::BaselineLanes>(data, begin, end);
}

}  // namespace precdetect
