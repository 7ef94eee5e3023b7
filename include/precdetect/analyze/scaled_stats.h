#pragma once
/// The statistics of a quantized weight whose scales are other tensors (load/quantization.h), of the values the
/// model computes with: fp8 stored value x block scale, each product in float32 as the dequantizing kernels form it
/// (DeepSeek-V3's weight_dequant, compressed-tensors' dequantize); MLX's affine codes as scale x q + bias, each
/// operation rounded to the scales' dtype as mx.dequantize computes them.

#include "precdetect/analyze/tensor_stats.h"
#include "precdetect/load/host_values.h"
#include "precdetect/load/tensor_record.h"

namespace precdetect {

/// `weight`'s values with `scale`'s (and for ScaleScheme::kAffine `bias`'s, else nullptr), in `link`'s blocks of
/// rows and columns. Exactness counts are left at 0: a dequantized value is no stored value.
TensorStats scaled_stats(const HostValues& weight, const HostValues& scale, const HostValues* bias,
                         const ScaleLink& link);

}  // namespace precdetect
