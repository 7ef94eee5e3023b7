#include <array>

#include "precdetect/quantize/scheme.h"

namespace precdetect {

// Every scheme, one line each, in the order their links run: the QuantScheme its file (named beside it) defines.
// quanto renames its codes to the weight's own name (`X.weight._data` becomes `X.weight`), so the schemes after it
// see the weight by its name; no two schemes link the same weight; the unread schemes come last, to count what none
// of the others read.
#define PRECDETECT_QUANT_SCHEMES(SCHEME)                      \
  SCHEME(kZeroPointScheme)        /* zero_point.cpp */        \
  SCHEME(kBitsandbytesScheme)     /* bitsandbytes.cpp */      \
  SCHEME(kQuantoScheme)           /* quanto.cpp */            \
  SCHEME(kMlxAffineScheme)        /* mlx_affine.cpp */        \
  SCHEME(kFp8ScalesScheme)        /* fp8_scales.cpp */        \
  SCHEME(kMicroscalingScheme)     /* microscaling.cpp */      \
  SCHEME(kNvfp4Scheme)            /* nvfp4.cpp */             \
  SCHEME(kInt8CodesScheme)        /* int8_codes.cpp */        \
  SCHEME(kTorchaoScheme)          /* torchao.cpp */           \
  SCHEME(kDequantizeLinearScheme) /* dequantize_linear.cpp */ \
  SCHEME(kSparse24Scheme)         /* sparse_24.cpp */         \
  SCHEME(kUnreadScheme)           /* unread.cpp: last, what no scheme before it read */

#define PRECDETECT_DECLARE_SCHEME(NAME) extern const QuantScheme NAME;
#define PRECDETECT_SCHEME_ADDRESS(NAME) &(NAME),
PRECDETECT_QUANT_SCHEMES(PRECDETECT_DECLARE_SCHEME)

namespace {

const auto kSchemes = std::to_array<const QuantScheme*>({PRECDETECT_QUANT_SCHEMES(PRECDETECT_SCHEME_ADDRESS)});

}  // namespace

std::span<const QuantScheme* const> quant_schemes() { return kSchemes; }

TensorStats quantized_stats(const LinkedValues& values) { return values.link().scheme().stats(values); }

}  // namespace precdetect
