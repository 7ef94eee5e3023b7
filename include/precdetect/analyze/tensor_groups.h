#pragma once
/// Which part of a model a parameter belongs to, from its name: the groups per-group summaries are made of.

#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace precdetect {

/// embedding, attention, mlp, norm, head (lm_head / output projection), bias, other.
std::string_view tensor_group(std::string_view name);

/// A block of a model: its stack (`model.layers`, `encoder.block`, `transformer.h`) and index.
struct Layer {
  std::string stack;
  int index = 0;
  auto operator<=>(const Layer&) const = default;
};

/// The block a name belongs to (`model.layers.12.mlp...` -> {model.layers, 12}), if it names one.
std::optional<Layer> tensor_layer(std::string_view name);

}  // namespace precdetect
