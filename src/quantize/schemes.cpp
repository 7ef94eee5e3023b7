#include <algorithm>
#include <array>
#include <stdexcept>

#include "precdetect/quantize/scheme.h"

namespace precdetect {

// The schemes, one file each in this folder. A new scheme is its file, its line here and its line in the list.
extern const QuantScheme kZeroPointScheme;         // zero_point.cpp
extern const QuantScheme kBitsandbytesScheme;      // bitsandbytes.cpp
extern const QuantScheme kQuantoScheme;            // quanto.cpp
extern const QuantScheme kMlxAffineScheme;         // mlx_affine.cpp
extern const QuantScheme kFp8ScalesScheme;         // fp8_scales.cpp
extern const QuantScheme kMicroscalingScheme;      // microscaling.cpp
extern const QuantScheme kNvfp4Scheme;             // nvfp4.cpp
extern const QuantScheme kInt8CodesScheme;         // int8_codes.cpp
extern const QuantScheme kTorchaoScheme;           // torchao.cpp
extern const QuantScheme kDequantizeLinearScheme;  // dequantize_linear.cpp
extern const QuantScheme kUnreadScheme;            // unread.cpp: last, what no scheme before it read

namespace {

// quanto renames its codes to the weight's own name (`X.weight._data` becomes `X.weight`), so the schemes after it
// see the weight by its name; no two schemes link the same weight; the unread schemes come last, to count what none
// of the others read.
const auto kSchemes =
    std::to_array<const QuantScheme*>({&kZeroPointScheme, &kBitsandbytesScheme, &kQuantoScheme, &kMlxAffineScheme,
                                       &kFp8ScalesScheme, &kMicroscalingScheme, &kNvfp4Scheme, &kInt8CodesScheme,
                                       &kTorchaoScheme, &kDequantizeLinearScheme, &kUnreadScheme});

}  // namespace

std::span<const QuantScheme* const> quant_schemes() { return kSchemes; }

void link_quantized(std::vector<TensorRecord>& tensors, const nlohmann::json& config, const std::string& file) {
  for (const QuantScheme* scheme : kSchemes) scheme->link(tensors, config, file);
}

TensorStats quantized_stats(const LinkedValues& values) {
  const ScaleScheme computed = values.link().scheme;
  for (const QuantScheme* scheme : kSchemes)
    if (std::ranges::find(scheme->computes, computed) != scheme->computes.end()) return scheme->stats(values);
  throw std::logic_error("quantized_stats: no scheme computes this link");  // every ScaleScheme has its scheme
}

}  // namespace precdetect
