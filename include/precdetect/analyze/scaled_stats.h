#pragma once
/// The statistics of a weight stored in fp8 with its scales in another tensor (load/quantization.h): of the values
/// the model computes with, stored value x block scale, each product in float32 as the dequantizing kernels form it
/// (DeepSeek-V3's weight_dequant, compressed-tensors' dequantize).

#include "precdetect/analyze/tensor_stats.h"
#include "precdetect/load/host_values.h"
#include "precdetect/load/tensor_record.h"

namespace precdetect {

/// `weight`'s values times `scale`'s (in `link`'s blocks of rows and columns), chunk by chunk. Exactness counts
/// are left at 0: a dequantized value is no stored value.
TensorStats scaled_stats(const HostValues& weight, const HostValues& scale, const ScaleLink& link);

}  // namespace precdetect
