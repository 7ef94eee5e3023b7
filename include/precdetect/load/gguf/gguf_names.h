#pragma once
/// Hugging Face transformers' names for the tensors llama.cpp's converter (convert_hf_to_gguf.py) writes, for
/// the architectures whose conversion only renames them: llama (whose q and k rows the converter also
/// interleaves per head: LlamaModel.permute), qwen2 and qwen3. The names are gguf-py's tensor_mapping.py's.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "precdetect/load/tensor_record.h"

namespace precdetect {

/// Sets TensorRecord::torch_name of every record the table names, for a model whose GGUF key/values
/// (`general.architecture`, `{arch}.attention.head_count`, `head_count_kv`) are `key_values`; llama's q and k
/// also get TorchLayout::kRopeInterleaved. Other architectures, names outside the table, and llama's q and k when
/// the head counts are missing or do not divide their rows keep their GGUF names alone: never a guessed pairing.
void name_like_transformers(std::vector<TensorRecord>& records, const nlohmann::ordered_json& key_values);

/// The GGUF name llama.cpp's converter gives the transformers tensor `name` of a llama, qwen2 or qwen3 model
/// ("model.layers.3.mlp.down_proj.weight" -> "blk.3.ffn_down.weight"); nullopt for a name outside the table.
std::optional<std::string> gguf_name(std::string_view name);

/// Marks the tensors llama.cpp's converter computes from a model's rope config, in any architecture
/// (`rope_freqs`: Llama 3's scaling, Gemma's unrotated dims at 1e30; `rope_factors_long`/`_short`: Phi-3's and
/// MiniCPM's config lists), as buffers TensorRecord::computed_from_config: no checkpoint holds them, and their
/// values are not trained weights, so they neither feed the verdict nor count as a diff's extra tensors.
void mark_computed_from_config(std::vector<TensorRecord>& records);

}  // namespace precdetect
