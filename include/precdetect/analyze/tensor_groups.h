#pragma once
/// Which part of a model a parameter belongs to, from its name: the groups per-group summaries are made of.

#include <compare>
#include <optional>
#include <string>
#include <string_view>

#include "precdetect/core/named_enum.h"

namespace precdetect {

/// The part of a model a parameter belongs to; scan and diff alike decide it by tensor_group().
enum class TensorGroup { kEmbedding, kAttention, kMlp, kNorm, kHead, kBias, kOther };

/// "embedding", "attention", "mlp", "norm", "head" (lm_head / output projection), "bias", "other".
std::string_view group_name(TensorGroup group);

/// The group a parameter's name puts it in (first match: bias, norm, head, embedding, attention, mlp; else other).
TensorGroup tensor_group(std::string_view name);

/// A block of a model: its stack (`model.layers`, `encoder.block`, `transformer.h`) and index.
struct Layer {
  std::string stack;
  int index = 0;
  auto operator<=>(const Layer&) const = default;
};

/// The block a name belongs to (`model.layers.12.mlp...` -> {model.layers, 12}), if it names one.
std::optional<Layer> tensor_layer(std::string_view name);

}  // namespace precdetect

template <>
struct fmt::formatter<precdetect::TensorGroup>
    : precdetect::NamedEnumFormatter<precdetect::TensorGroup, precdetect::group_name> {};
