#include "precdetect/load/embedded_pickles.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <optional>

#include "precdetect/load/pickle/pickle_stream.h"

namespace precdetect {
namespace {

/// What base64 text starts with when it encodes a zip's local header ("PK\x03\x04") or a gzip stream (1f 8b 08);
/// a pickle of protocol 2-5 (0x80 0x02...0x05) is "gA" and a third character from `I` to `X` (its protocol's four
/// bits and two of the next byte's). Only such strings are decoded.
constexpr std::array<std::string_view, 2> kEncodedStarts = {"UEsDB", "H4sI"};
constexpr size_t kShortest = 16;              // no pickle worth a REDUCE is shorter than 12 bytes
constexpr size_t kLongest = size_t{1} << 30;  // what one string may decode to, as a decompressed layer

int sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

/// `text` decoded as standard base64 (padding optional, JSON's `\/` read as `/`), or nullopt for any other
/// character.
std::optional<std::string> decoded(std::string_view text) {
  std::string out;
  out.reserve(text.size() / 4 * 3 + 3);
  uint32_t bits = 0;
  int held = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '=') break;
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '/') continue;
    int value = sextet(c);
    if (value < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(value);
    held += 6;
    if (held >= 8) {
      held -= 8;
      out.push_back(static_cast<char>((bits >> held) & 0xff));
    }
  }
  return out;
}

bool starts_encoded(std::string_view text) {
  if (text.size() >= 3 && text.starts_with("gA") && text[2] >= 'I' && text[2] <= 'X') return true;
  for (std::string_view start : kEncodedStarts)
    if (text.starts_with(start)) return true;
  return false;
}

}  // namespace

void name_embedded_pickles(std::string_view text, const std::string& where, PickleVisitor& visitor) {
  for (size_t quote = text.find('"'); quote != std::string_view::npos; quote = text.find('"', quote + 1)) {
    size_t start = quote + 1;
    if (!starts_encoded(text.substr(start, 5))) continue;
    size_t end = text.find('"', start);
    if (end == std::string_view::npos) return;
    std::string_view encoded = text.substr(start, end - start);
    quote = end;
    if (encoded.size() < kShortest || encoded.size() / 4 * 3 > kLongest) continue;
    std::optional<std::string> bytes = decoded(encoded);
    if (!bytes) continue;
    std::string inside = fmt::format("{}!base64@{}", where, start);
    auto raw = std::as_bytes(std::span(*bytes));
    if (starts_like_pickle(raw)) {
      visitor.pickles(raw, inside, 0);
      continue;
    }
    std::unique_ptr<ByteSource> source = span_source(raw, inside);
    if (std::unique_ptr<FormatFile> file = open_format(*source)) visitor.nested(*file, inside);
  }
}

}  // namespace precdetect
