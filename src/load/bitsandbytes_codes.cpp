#include "precdetect/load/bitsandbytes_codes.h"

#include <array>
#include <string_view>
#include <unordered_map>

#include "precdetect/load/state_parts.h"

namespace precdetect {
namespace {

using Names = RecordNames;

void link_4bit(TensorRecord& weight, std::vector<TensorRecord>& tensors, const Names& names) {
  for (std::string_view type : {"nf4", "fp4"}) {
    std::string state = weight.name + ".quant_state.bitsandbytes__" + std::string(type);
    if (!names.contains(state)) continue;
    TensorRecord* absmax = state_part(tensors, names, weight.name + ".absmax");
    TensorRecord* quant_map = state_part(tensors, names, weight.name + ".quant_map");
    TensorRecord* nested_absmax = state_part(tensors, names, weight.name + ".nested_absmax");
    TensorRecord* nested_quant_map = state_part(tensors, names, weight.name + ".nested_quant_map");
    state_part(tensors, names, state);
    if (absmax == nullptr || quant_map == nullptr || (nested_absmax == nullptr) != (nested_quant_map == nullptr))
      return;  // incomplete: the codes are counted, never guessed
    weight.scaled_by =
        ScaleLink{.tensor = absmax->name,
                  .block_cols = 0,  // the blocksize is in the quantization state's JSON, read with the values
                  .scheme = ScaleScheme::kBlockwise4bit,
                  .bits = 4,
                  .blockwise = Blockwise4bitParts{.quant_map = quant_map->name,
                                                  .quant_state = state,
                                                  .nested_absmax = nested_absmax ? nested_absmax->name : "",
                                                  .nested_quant_map = nested_quant_map ? nested_quant_map->name : ""}};
    return;
  }
}

void link_int8(TensorRecord& weight, std::vector<TensorRecord>& tensors, const Names& names) {
  std::string module = weight.name.substr(0, weight.name.size() - std::string_view(".weight").size());
  TensorRecord* scb = state_part(tensors, names, module + ".SCB");
  state_part(tensors, names, module + ".weight_format");
  if (scb == nullptr || scb->dtype != DType::F32) return;
  weight.scaled_by = ScaleLink{.tensor = scb->name, .scheme = ScaleScheme::kInt8Rows, .bits = 8};
}

}  // namespace

void link_bitsandbytes(std::vector<TensorRecord>& tensors) {
  Names names;
  for (size_t i = 0; i < tensors.size(); ++i) names.emplace(tensors[i].name, i);
  for (TensorRecord& weight : tensors) {
    if (!weight.name.ends_with(".weight")) continue;
    if (weight.dtype == DType::U8) link_4bit(weight, tensors, names);
    if (weight.dtype == DType::I8 && weight.shape.size() == 2) link_int8(weight, tensors, names);
  }
}

}  // namespace precdetect
