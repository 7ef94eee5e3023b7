#pragma once
/// Integer-quantized safetensors whose codes are packed in int32 words beside per-group scales and zero points,
/// each weight linked to its parts so that it is analyzed as its kernels dequantize it (ScaleScheme::kZeroPoint):
/// - GPTQ (`qweight` [in x bits / 32, out], `qzeros`, `scales` [groups, out], `g_idx`), the v1 zero points
///   (stored one below, as AutoGPTQ writes them) or v2 (`checkpoint_format` "gptq_v2");
/// - AWQ's GEMM layout (`qweight` [in, out / 8] in AWQ's nibble order, `qzeros`, `scales`);
/// - compressed-tensors' pack-quantized (`weight_packed` [out, in x bits / 32], `weight_scale`,
///   `weight_zero_point` packed along the outputs, `weight_shape`).
/// Which one, and its bits, come from config.json's `quantization_config` (or GPTQ's quantize_config.json): without
/// them the codes are counted, never read by a guessed layout. The parts beside the codes get TensorRole::kScale.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "precdetect/load/tensor_record.h"

namespace precdetect {

/// Links every quantized weight of `tensors` that `config`'s `quantization_config` describes to its parts. Shapes
/// are checked when the values are read (zero_point_stats), where compressed-tensors' weight_shape is known.
void link_zero_point_codes(std::vector<TensorRecord>& tensors, const nlohmann::json& config);

}  // namespace precdetect
