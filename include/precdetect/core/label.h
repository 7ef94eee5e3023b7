#pragma once
/// The verdict's labels: the training precisions precdetect tells apart, and "unknown".

#include <array>
#include <optional>
#include <string_view>

#include "precdetect/core/named_enum.h"

namespace precdetect {

enum class Label { kFp16, kBf16, kFp32, kUnknown };

inline constexpr std::array<Label, 4> kLabels = {Label::kFp16, Label::kBf16, Label::kFp32, Label::kUnknown};

/// "fp16", "bf16", "fp32", "unknown": the name in rules files, JSON, the table and on the command line.
constexpr std::string_view label_name(Label label) {
  switch (label) {
    case Label::kFp16:
      return "fp16";
    case Label::kBf16:
      return "bf16";
    case Label::kFp32:
      return "fp32";
    case Label::kUnknown:
      return "unknown";
  }
  return "unknown";
}

/// The label a name spells; nullopt for any other text.
constexpr std::optional<Label> parse_label(std::string_view name) {
  for (Label label : kLabels)
    if (label_name(label) == name) return label;
  return std::nullopt;
}

}  // namespace precdetect

template <>
struct fmt::formatter<precdetect::Label> : precdetect::NamedEnumFormatter<precdetect::Label, precdetect::label_name> {};
