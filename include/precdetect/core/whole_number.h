#pragma once
/// A whole number written as text, read all or nothing: what a header, an environment variable or a file name holds
/// where precdetect needs a count, a code or a descriptor.

#include <charconv>
#include <optional>
#include <string_view>

namespace precdetect {

/// `text` as a T when all of it is one: decimal digits (after a `-` for a signed T), nothing before or after, within
/// T's range (from_chars: no space, no `+`, no `0x`); nullopt otherwise, the empty text included.
template <typename T>
std::optional<T> whole_number(std::string_view text) {
  T value{};
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace precdetect
