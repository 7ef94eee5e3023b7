#pragma once
/// Enums of the vocabulary format as their names: `template <> struct fmt::formatter<Label> :
/// precdetect::NamedEnumFormatter<Label, label_name> {};` beside the enum.

#include <fmt/format.h>

#include <string_view>

namespace precdetect {

template <typename Enum, std::string_view (*Name)(Enum)>
struct NamedEnumFormatter : fmt::formatter<std::string_view> {
  template <typename FormatContext>
  auto format(Enum value, FormatContext& context) const {
    return fmt::formatter<std::string_view>::format(Name(value), context);
  }
};

}  // namespace precdetect
