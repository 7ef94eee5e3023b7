#pragma once
/// optimum-quanto's quantized weights (src/quantize/quanto.cpp) as its QModuleMixin state dict flattens a frozen module
/// (what `safetensors.torch.save_file(model.state_dict())` and QuantizedModelForCausalLM.save_pretrained write), each
/// linked to its parts so that it is analyzed as quanto's dequantize() computes it (ScaleScheme::kQuanto):
/// - qint8 and qfloat8 (e4m3fn, e5m2): `X.weight._data` (int8 or fp8, the weight's shape) and `X.weight._scale`
///   (one per output row, or one for the tensor);
/// - qint4 and qint2: `X.weight._data._data` (PackedTensor's uint8 codes), `X.weight._scale` and `X.weight._shift`,
///   one each per group of the weight's rows (or per output row).
/// The weight is renamed `X.weight`, its own name; its parts and the module's `X.input_scale` and `X.output_scale`
/// (its activations' scales) get TensorRole::kScale. What reports need of the scheme: its qtypes' names.

#include <string_view>

#include "precdetect/load/tensor_record.h"

namespace precdetect {

/// The qtype's name as quanto gives it: "qint2", "qint4", "qint8", "qfloat8_e4m3fn", "qfloat8_e5m2".
std::string_view quanto_type_name(QuantoType type);

}  // namespace precdetect
