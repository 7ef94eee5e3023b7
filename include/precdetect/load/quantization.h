#pragma once
/// Quantized safetensors whose weights are stored in fp8 with their scales beside them, each pair linked so that
/// the weight is analyzed as the model computes with it (stored value x scale):
/// - FP8 with 2-D blocks of `weight_scale_inv` (DeepSeek-V3 and many 2025-2026 releases; transformers'
///   FineGrainedFP8, `quantization_config.quant_method` "fp8" with `weight_block_size`);
/// - compressed-tensors' float8 (`weight_scale`, per tensor, per channel or per group) and FBGEMM's fp8;
/// - MLX's affine quantization (`weight` packed in uint32 with `scales` and `biases` per group, 2, 3, 4, 5, 6 or 8
/// bits, as
///   config.json's `quantization` says: without it the codes are counted, never read by a guessed layout).
/// The scale (and bias) tensors get TensorRole::kScale. Integer codes with zero points (GPTQ, AWQ,
/// compressed-tensors' pack-quantized) are linked by load/zero_point_codes.h, bitsandbytes' by
/// load/bitsandbytes_codes.h, optimum-quanto's by load/quanto_codes.h; link_scales calls all three.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "precdetect/load/tensor_record.h"

namespace precdetect {

/// Links every fp8 `X.weight` to its `X.weight_scale_inv` or `X.weight_scale` in `tensors`. The block a scale
/// covers is config.json's `quantization_config.weight_block_size` where given, else what the two shapes imply
/// (one scale: the whole tensor; one per row; a grid of ceil-divided blocks). `config` is config.json's object
/// (null without one). Throws Error(kSizeMismatch) naming `file` and both tensors when the scale's shape fits no
/// blocking of the weight (or not the configured one), MLX scales that do not fit its packed weight, or quanto parts
/// that do not fit one another (link_quanto).
void link_scales(std::vector<TensorRecord>& tensors, const nlohmann::json& config, const std::string& file);

}  // namespace precdetect
