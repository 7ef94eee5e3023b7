#include "precdetect/load/gguf/gguf_names.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string_view>

namespace precdetect {
namespace {

using nlohmann::ordered_json;

constexpr std::string_view kRenamedArchitectures[] = {"llama", "qwen2", "qwen3"};

/// gguf-py's MODEL_TENSOR names and the transformers names they map from, outside the blocks and inside them.
constexpr std::pair<std::string_view, std::string_view> kModelTensors[] = {
    {"token_embd", "model.embed_tokens"}, {"output_norm", "model.norm"}, {"output", "lm_head"}};
constexpr std::pair<std::string_view, std::string_view> kBlockTensors[] = {
    {"attn_norm", "input_layernorm"},    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},      {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"}, {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"}, {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"}};

/// gguf-py's MODEL_TENSOR names of the tensors convert_hf_to_gguf.py computes in generate_extra_tensors: rope_freqs
/// from rope_parameters (Llama 3's scaling, Gemma's proportional rope), the rope_factors from rope_scaling's
/// long_factor and short_factor lists (Phi-3, MiniCPM).
constexpr std::string_view kComputedTensors[] = {"rope_freqs", "rope_factors_long", "rope_factors_short"};

/// A GGUF tensor name taken apart: `blk.12.attn_q.weight` is block "12", tensor "attn_q", suffix ".weight".
struct GgufName {
  std::optional<std::string_view> block;
  std::string_view tensor, suffix;
};

std::optional<GgufName> parse(std::string_view name) {
  size_t last = name.rfind('.');
  if (last == std::string_view::npos) return std::nullopt;
  GgufName parts{.tensor = name.substr(0, last), .suffix = name.substr(last)};
  if (parts.suffix != ".weight" && parts.suffix != ".bias") return std::nullopt;
  if (!parts.tensor.starts_with("blk.")) return parts;
  std::string_view rest = parts.tensor.substr(4);
  size_t dot = rest.find('.');
  std::string_view block = rest.substr(0, dot);
  if (dot == std::string_view::npos || block.empty() || !std::all_of(block.begin(), block.end(), ::isdigit))
    return std::nullopt;
  parts.block = block;
  parts.tensor = rest.substr(dot + 1);
  return parts;
}

template <size_t N>
std::optional<std::string_view> lookup(const std::pair<std::string_view, std::string_view> (&table)[N],
                                       std::string_view key) {
  for (auto [gguf, hf] : table)
    if (gguf == key) return hf;
  return std::nullopt;
}

int64_t head_count(const ordered_json& key_values, const std::string& key) {
  auto found = key_values.find(key);
  return found != key_values.end() && found->is_number_unsigned() ? found->get<int64_t>() : 0;
}

/// The heads whose rows llama.cpp interleaved in llama's q (q's heads) or k (the key/value heads, q's when not
/// given); 0 when the key/values do not give them or they do not divide the rows.
int64_t rope_heads(std::string_view tensor, const std::vector<int64_t>& shape, const ordered_json& key_values) {
  int64_t heads = head_count(key_values, "llama.attention.head_count");
  int64_t kv_heads = head_count(key_values, "llama.attention.head_count_kv");
  if (tensor == "attn_k" && kv_heads > 0) heads = kv_heads;
  // Half the rows divided by the heads: 2 * heads would overflow for a count a damaged file makes huge.
  bool divides = heads > 0 && !shape.empty() && shape[0] % 2 == 0 && (shape[0] / 2) % heads == 0;
  return divides ? heads : 0;
}

}  // namespace

void name_like_transformers(std::vector<TensorRecord>& records, const ordered_json& key_values) {
  auto arch_entry = key_values.find("general.architecture");
  if (arch_entry == key_values.end() || !arch_entry->is_string()) return;
  std::string arch = arch_entry->get<std::string>();
  if (std::find(std::begin(kRenamedArchitectures), std::end(kRenamedArchitectures), arch) ==
      std::end(kRenamedArchitectures))
    return;
  for (TensorRecord& record : records) {
    auto parts = parse(record.name);
    if (!parts) continue;
    auto hf = parts->block ? lookup(kBlockTensors, parts->tensor) : lookup(kModelTensors, parts->tensor);
    if (!hf) continue;
    if (arch == "llama" && (parts->tensor == "attn_q" || parts->tensor == "attn_k")) {
      record.rope_heads = rope_heads(parts->tensor, record.shape, key_values);
      if (record.rope_heads == 0) continue;  // left unpaired rather than compared in the wrong row order
      record.torch_layout = TorchLayout::kRopeInterleaved;
    }
    record.torch_name = parts->block ? fmt::format("model.layers.{}.{}{}", *parts->block, *hf, parts->suffix)
                                     : fmt::format("{}{}", *hf, parts->suffix);
  }
}

std::optional<std::string> gguf_name(std::string_view name) {
  size_t last = name.rfind('.');
  if (last == std::string_view::npos) return std::nullopt;
  std::string_view stem = name.substr(0, last), suffix = name.substr(last);
  if (suffix != ".weight" && suffix != ".bias") return std::nullopt;
  for (auto [gguf, hf] : kModelTensors)
    if (stem == hf) return fmt::format("{}{}", gguf, suffix);
  constexpr std::string_view kLayers = "model.layers.";
  if (!stem.starts_with(kLayers)) return std::nullopt;
  std::string_view rest = stem.substr(kLayers.size());
  size_t dot = rest.find('.');
  std::string_view block = rest.substr(0, dot);
  if (dot == std::string_view::npos || block.empty() || !std::all_of(block.begin(), block.end(), ::isdigit))
    return std::nullopt;
  for (auto [gguf, hf] : kBlockTensors)
    if (rest.substr(dot + 1) == hf) return fmt::format("blk.{}.{}{}", block, gguf, suffix);
  return std::nullopt;
}

void mark_computed_from_config(std::vector<TensorRecord>& records) {
  for (TensorRecord& record : records) {
    auto parts = parse(record.name);
    if (!parts || parts->block || parts->suffix != ".weight" ||
        std::ranges::find(kComputedTensors, parts->tensor) == std::end(kComputedTensors))
      continue;
    record.computed_from_config = true;
    record.role = TensorRole::kBuffer;
    record.role_from_file = true;
  }
}

}  // namespace precdetect
