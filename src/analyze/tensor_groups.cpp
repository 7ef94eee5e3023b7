#include "precdetect/analyze/tensor_groups.h"

#include <array>
#include <regex>
#include <string>

namespace precdetect {
namespace {

struct GroupPattern {
  TensorGroup group;
  std::regex pattern;
};

// Parameter names of T5, GPT-2, GPT-NeoX, Llama, BERT, BLOOM and OPT (docs/json-schema.md lists examples).
// First match wins: biases before everything, norms before attention (T5's `layer_norm` sits beside
// `SelfAttention`), the head before embeddings (tied `lm_head` vs `wte`).
const std::array<GroupPattern, 6>& group_patterns() {
  auto icase = std::regex::ECMAScript | std::regex::icase | std::regex::optimize;
  static const std::array<GroupPattern, 6> patterns = {{
      {TensorGroup::kBias, std::regex(R"((^|\.)bias$)", icase)},
      {TensorGroup::kNorm, std::regex(R"(norm|(^|\.)ln_?(f|\d+)?\.|layernorm)", icase)},
      {TensorGroup::kHead, std::regex(R"((^|\.)(lm_head|embed_out|score|classifier)(\.|$)|^(output|cls)\.)", icase)},
      {TensorGroup::kEmbedding,
       std::regex(R"(embed|(^|\.)(wte|wpe|shared|word_embeddings|position_embeddings|relative_attention_bias)(\.|$))",
                  icase)},
      {TensorGroup::kAttention,
       std::regex(R"(attn|attention|(^|\.)(q|k|v|o|q_proj|k_proj|v_proj|o_proj|query_key_value)\.)", icase)},
      {TensorGroup::kMlp,
       std::regex(R"(mlp|(^|\.)(DenseReluDense|ffn|fc1|fc2|intermediate|wi|wo|wi_0|wi_1)(\.|$)|output\.dense)", icase)},
  }};
  return patterns;
}

}  // namespace

std::string_view group_name(TensorGroup group) {
  switch (group) {
    case TensorGroup::kEmbedding:
      return "embedding";
    case TensorGroup::kAttention:
      return "attention";
    case TensorGroup::kMlp:
      return "mlp";
    case TensorGroup::kNorm:
      return "norm";
    case TensorGroup::kHead:
      return "head";
    case TensorGroup::kBias:
      return "bias";
    case TensorGroup::kOther:
      return "other";
  }
  return "other";
}

TensorGroup tensor_group(std::string_view name) {
  std::string text(name);
  for (const GroupPattern& candidate : group_patterns())
    if (std::regex_search(text, candidate.pattern)) return candidate.group;
  return TensorGroup::kOther;
}

std::optional<Layer> tensor_layer(std::string_view name) {
  static const std::regex block(R"(^(.*?(^|\.)(layers?|h|block|blocks))\.(\d{1,6})\.)", std::regex::optimize);
  std::string text(name);
  std::smatch match;
  if (!std::regex_search(text, match, block)) return std::nullopt;
  return Layer{.stack = match[1].str(), .index = std::stoi(match[4].str())};
}

}  // namespace precdetect
