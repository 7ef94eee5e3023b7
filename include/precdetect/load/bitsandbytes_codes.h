#pragma once
/// bitsandbytes' quantized weights as transformers saves them, each linked to its parts so that it is analyzed as
/// bitsandbytes dequantizes it:
/// - 4-bit (nf4, fp4; Linear4bit): `X.weight` uint8 (two codes a byte), `X.weight.absmax`, `X.weight.quant_map`,
///   `X.weight.quant_state.bitsandbytes__nf4` (or `__fp4`: JSON bytes with the shape, dtype and blocksize), and
///   with nested quantization `X.weight.nested_absmax` and `X.weight.nested_quant_map`;
/// - 8-bit (LLM.int8; Linear8bitLt): `X.weight` int8 [out, in] and `X.SCB`, one float32 per row.
/// The names describe themselves: no config is needed. The parts get TensorRole::kScale.

#include <vector>

#include "precdetect/load/tensor_record.h"

namespace precdetect {

/// Links every bitsandbytes weight of `tensors` to its parts; their shapes are checked when the values are read
/// (bitsandbytes_stats.h), where the quantization state's JSON is known.
void link_bitsandbytes(std::vector<TensorRecord>& tensors);

}  // namespace precdetect
