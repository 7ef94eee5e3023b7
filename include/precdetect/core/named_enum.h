#pragma once
/// The names of the vocabulary's enums. A name table lists each value with its name in the enum's order, which
/// listed_in_enum_order checks at compile time, so that a name is an index away and names parse back; and the enums
/// format as their names: `template <> struct fmt::formatter<Label> : precdetect::NamedEnumFormatter<Label,
/// label_name> {};` beside the enum.

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace precdetect {

/// One row of an enum's name table.
template <typename Enum>
struct NamedValue {
  Enum value;
  std::string_view name;
};

/// True when row i of `table` holds the enumerator of value i, for every row: `static_assert` it beside the table.
template <typename Enum, size_t N>
constexpr bool listed_in_enum_order(const std::array<NamedValue<Enum>, N>& table) {
  for (size_t i = 0; i < N; ++i)
    if (static_cast<size_t>(table[i].value) != i) return false;
  return true;
}

/// `value`'s name in a table listed in the enum's order.
template <typename Enum, size_t N>
constexpr std::string_view name_in(const std::array<NamedValue<Enum>, N>& table, Enum value) {
  return table[static_cast<size_t>(value)].name;
}

/// The value named `name` in `table`; nullopt for a name it does not hold.
template <typename Enum, size_t N>
constexpr std::optional<Enum> value_named(const std::array<NamedValue<Enum>, N>& table, std::string_view name) {
  for (const NamedValue<Enum>& row : table)
    if (row.name == name) return row.value;
  return std::nullopt;
}

template <typename Enum, std::string_view (*Name)(Enum)>
struct NamedEnumFormatter : fmt::formatter<std::string_view> {
  template <typename FormatContext>
  auto format(Enum value, FormatContext& context) const {
    return fmt::formatter<std::string_view>::format(Name(value), context);
  }
};

}  // namespace precdetect
