#pragma once
/// Tensor subclasses stored as their parts (torchao's quantized tensors): how a file names the parts and describes
/// each subclass, and how the descriptions reach the quantization schemes. torchao's flatten_tensor_state_dict (and
/// transformers' TorchAoConfig through it) stores `X.weight` as `X._weight_qdata`, `X._weight_scale`, ... with a
/// description in the safetensors header's metadata under `X.weight`, listed in its `tensor_names`; a pickle's
/// reader names the parts the same way and writes the same description (load/torch).

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace precdetect {

/// The name torchao's flatten_tensor_state_dict gives part `attribute` of tensor `tensor`: `X.weight` and "qdata"
/// give `X._weight_qdata`.
std::string subclass_part_name(const std::string& tensor, std::string_view attribute);

/// The descriptions of the subclasses a safetensors header's `metadata` lists in `tensor_names` (each tensor's
/// entry other than a plain tensor's `{"_type": "Tensor"}`), added to `subclasses` by name. A metadata without
/// `tensor_names`, or whose `tensor_names` is no JSON list of names, describes none.
void add_safetensors_subclasses(std::map<std::string, std::string>& subclasses,
                                const std::map<std::string, std::string>& metadata);

/// `config` (config.json's object, or null) with `subclasses` (Checkpoint::tensor_subclasses) as its
/// `tensor_subclasses`: an object of each description parsed, by name; a description that is no JSON is left out.
nlohmann::json with_tensor_subclasses(nlohmann::json config, const std::map<std::string, std::string>& subclasses);

/// The `tensor_subclasses` with_tensor_subclasses put in `config`; nullptr where there are none.
const nlohmann::json* tensor_subclasses_of(const nlohmann::json& config);

}  // namespace precdetect
