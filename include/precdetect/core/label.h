#pragma once
/// The verdict's labels: the training precisions precdetect tells apart, the two-label values the evidence may
/// leave open ("fp16|fp32": one of the two, the evidence cannot say which), and "unknown".

#include <array>
#include <optional>
#include <span>
#include <string_view>

#include "precdetect/core/named_enum.h"

namespace precdetect {

enum class Label { kFp16, kBf16, kFp32, kFp16OrBf16, kFp16OrFp32, kBf16OrFp32, kUnknown };

inline constexpr std::array<Label, 7> kLabels = {Label::kFp16,       Label::kBf16,       Label::kFp32,
                                                 Label::kFp16OrBf16, Label::kFp16OrFp32, Label::kBf16OrFp32,
                                                 Label::kUnknown};

/// "fp16", "bf16", "fp32", "fp16|bf16", "fp16|fp32", "bf16|fp32", "unknown": the name in rules files, JSON, the
/// table and on the command line.
constexpr std::string_view label_name(Label label) {
  switch (label) {
    case Label::kFp16:
      return "fp16";
    case Label::kBf16:
      return "bf16";
    case Label::kFp32:
      return "fp32";
    case Label::kFp16OrBf16:
      return "fp16|bf16";
    case Label::kFp16OrFp32:
      return "fp16|fp32";
    case Label::kBf16OrFp32:
      return "bf16|fp32";
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

/// The precisions a label leaves open, one bit each (fp16 1, bf16 2, fp32 4); unknown claims none.
constexpr unsigned label_bits(Label label) {
  switch (label) {
    case Label::kFp16:
      return 1;
    case Label::kBf16:
      return 2;
    case Label::kFp32:
      return 4;
    case Label::kFp16OrBf16:
      return 3;
    case Label::kFp16OrFp32:
      return 5;
    case Label::kBf16OrFp32:
      return 6;
    case Label::kUnknown:
      return 0;
  }
  return 0;
}

/// A single precision: fp16, bf16 or fp32.
constexpr bool is_precision(Label label) {
  unsigned bits = label_bits(label);
  return bits != 0 && (bits & (bits - 1)) == 0;
}

/// The label that leaves exactly `labels`' precisions open: one gives itself, two their two-label value, none or
/// all three "unknown" (evidence that rules nothing out claims nothing).
constexpr Label joined_label(std::span<const Label> labels) {
  unsigned bits = 0;
  for (Label label : labels) bits |= label_bits(label);
  for (Label label : kLabels)
    if (label_bits(label) == bits) return label;
  return Label::kUnknown;
}

/// Every precision `label` leaves open is one `within` leaves open: fp16 and fp16|fp32 are within fp16|fp32;
/// unknown is within nothing.
constexpr bool is_within(Label label, Label within) {
  return label_bits(label) != 0 && (label_bits(label) & ~label_bits(within)) == 0;
}

/// The two labels leave a precision open in common: fp16|fp32 shares fp16 with fp16.
constexpr bool shares_precision(Label a, Label b) { return (label_bits(a) & label_bits(b)) != 0; }

}  // namespace precdetect

template <>
struct fmt::formatter<precdetect::Label> : precdetect::NamedEnumFormatter<precdetect::Label, precdetect::label_name> {};
