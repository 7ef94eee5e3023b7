#include "precdetect/net/xml_text.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <utility>

#include "precdetect/core/utf8.h"

namespace precdetect {
namespace {

/// What the reference `&name;` stands for; nullopt when it is none XML defines.
std::optional<std::string> entity_text(std::string_view name) {
  constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kNamed = {
      {{"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"}}};
  for (auto [entity, text] : kNamed)
    if (name == entity) return std::string(text);
  if (!name.starts_with('#')) return std::nullopt;
  bool hex = name.size() > 1 && (name[1] == 'x' || name[1] == 'X');
  std::string_view digits = name.substr(hex ? 2 : 1);
  uint32_t code = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), code, hex ? 16 : 10);
  bool surrogate = code >= 0xD800 && code <= 0xDFFF;
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() || code == 0 || surrogate ||
      code > 0x10FFFF)
    return std::nullopt;
  std::string text;
  append_utf8(text, code);
  return text;
}

std::string unescaped(std::string_view text) {
  std::string out;
  for (size_t at = 0; at < text.size(); ++at) {
    size_t semicolon = text[at] == '&' ? text.find(';', at) : std::string_view::npos;
    std::optional<std::string> decoded;
    if (semicolon != std::string_view::npos) decoded = entity_text(text.substr(at + 1, semicolon - at - 1));
    if (!decoded) {
      out += text[at];
      continue;
    }
    out += *decoded;
    at = semicolon;
  }
  return out;
}

}  // namespace

std::vector<std::string> xml_element_texts(std::string_view xml, std::string_view tag) {
  std::vector<std::string> values;
  std::string open = "<" + std::string(tag) + ">", close = "</" + std::string(tag) + ">";
  for (size_t at = xml.find(open); at != std::string_view::npos; at = xml.find(open, at)) {
    size_t begin = at + open.size(), end = xml.find(close, begin);
    if (end == std::string_view::npos) break;
    values.push_back(unescaped(xml.substr(begin, end - begin)));
    at = end;
  }
  return values;
}

}  // namespace precdetect
