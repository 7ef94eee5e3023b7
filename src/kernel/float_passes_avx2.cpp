// The F32 and F64 passes compiled for AVX2 (kernel_isa.h): every function defined between the pragmas, and only
// those, may use AVX2, and the kernel calls them only where the CPU has it. The headers the loops include come
// first, so that none of their inline functions is compiled for AVX2 (the linker could hand another file that copy).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "precdetect/kernel/float_passes.h"
#include "precdetect/kernel/isa_lanes.h"
#include "precdetect/kernel/scalar_stats.h"
#include "precdetect/kernel/tensor_stats.h"

#ifdef PRECDETECT_HAS_AVX2_PATH

#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif

#include "precdetect/kernel/float_pass_loops.h"

namespace precdetect::avx2_path {

TensorStats f32_pass(const std::byte* data, size_t begin, size_t end, Exactness exactness) {
  return exactness == Exactness::kCounted ? reduce_floats<vectors::Avx2Lanes, Exactness::kCounted>(data, begin, end)
                                          : reduce_floats<vectors::Avx2Lanes, Exactness::kSkipped>(data, begin, end);
}

TensorStats f64_pass(const std::byte* data, size_t begin, size_t end) {
  return reduce_doubles<vectors::Avx2Lanes>(data, begin, end);
}

}  // namespace precdetect::avx2_path

#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif  // PRECDETECT_HAS_AVX2_PATH
