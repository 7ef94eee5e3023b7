#include "precdetect/net/url.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace precdetect {

std::string Url::text() const {
  return fmt::format("{}://{}{}{}{}", scheme, authority, path, query.empty() ? "" : "?", query);
}

bool is_url(std::string_view text) {
  for (std::string_view scheme : {"http://", "https://", "hf://", "s3://"})
    if (text.starts_with(scheme)) return true;
  return false;
}

std::optional<Url> parse_http_url(std::string_view text) {
  Url url;
  size_t colon = text.find("://");
  if (colon == std::string_view::npos) return std::nullopt;
  url.scheme = std::string(text.substr(0, colon));
  if (url.scheme != "http" && url.scheme != "https") return std::nullopt;
  std::string_view rest = text.substr(colon + 3);
  size_t slash = rest.find_first_of("/?#");
  url.authority = std::string(rest.substr(0, slash));
  // Userinfo in a URL would be a credential sent to whoever the host is: refused rather than parsed.
  if (url.authority.empty() || url.authority.find('@') != std::string::npos) return std::nullopt;
  rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  rest = rest.substr(0, rest.find('#'));
  size_t question = rest.find('?');
  url.path = std::string(rest.substr(0, question));
  if (question != std::string_view::npos) url.query = std::string(rest.substr(question + 1));
  if (url.path.empty()) url.path = "/";
  return url;
}

namespace {

/// `text` with each `%XX` decoded; nullopt when a `%` is not followed by two hex digits.
std::optional<std::string> percent_decoded(std::string_view text) {
  std::string out;
  for (size_t at = 0; at < text.size(); ++at) {
    if (text[at] != '%') {
      out += text[at];
      continue;
    }
    if (at + 2 >= text.size() || !std::isxdigit(static_cast<unsigned char>(text[at + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(text[at + 2])))
      return std::nullopt;
    out += static_cast<char>(std::stoi(std::string(text.substr(at + 1, 2)), nullptr, 16));
    at += 2;
  }
  return out;
}

/// An org or a name as huggingface_hub's validate_repo_id allows it (REPO_ID_REGEX, ASCII): the only characters a
/// repository's part of a URL path holds.
bool is_repo_id_part(std::string_view part) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  return !part.empty() && part.size() <= 96 && word(part.front()) && word(part.back()) &&
         std::all_of(part.begin(), part.end(), [&](char c) { return word(c) || c == '-' || c == '.'; }) &&
         part.find("--") == std::string_view::npos && part.find("..") == std::string_view::npos;
}

}  // namespace

std::optional<HubRef> parse_hub_url(std::string_view text) {
  if (!text.starts_with("hf://")) return std::nullopt;
  std::string_view spec = text.substr(std::string_view("hf://").size());
  size_t org_end = spec.find('/');
  if (org_end == std::string_view::npos || !is_repo_id_part(spec.substr(0, org_end))) return std::nullopt;
  size_t name_end = std::min(spec.find_first_of("@/", org_end + 1), spec.size());
  if (!is_repo_id_part(spec.substr(org_end + 1, name_end - org_end - 1))) return std::nullopt;
  HubRef ref{.repo = std::string(spec.substr(0, name_end)), .revision = "main"};
  std::string_view rest = spec.substr(name_end);
  if (rest.starts_with('@')) {
    size_t slash = std::min(rest.find('/'), rest.size());
    std::optional<std::string> revision = percent_decoded(rest.substr(1, slash - 1));
    if (!revision || revision->empty()) return std::nullopt;
    ref.revision = std::move(*revision);
    rest = rest.substr(slash);
  }
  while (rest.starts_with('/')) rest.remove_prefix(1);
  while (rest.ends_with('/')) rest.remove_suffix(1);
  ref.folder = std::string(rest);
  return ref;
}

std::string resolve_location(const Url& base, std::string_view location) {
  if (parse_http_url(location)) return std::string(location);
  if (location.starts_with("//")) return fmt::format("{}:{}", base.scheme, location);
  if (location.starts_with('/')) return fmt::format("{}://{}{}", base.scheme, base.authority, location);
  return fmt::format("{}://{}{}{}", base.scheme, base.authority, base.path.substr(0, base.path.rfind('/') + 1),
                     location);
}

std::string url_file_name(std::string_view url) {
  url = url.substr(0, url.find('?'));
  std::string_view name = url.substr(url.rfind('/') + 1);
  return percent_decoded(name).value_or(std::string(name));  // a stray `%` is the name's own
}

std::string url_folder(std::string_view url) {
  url = url.substr(0, url.find('?'));
  return std::string(url.substr(0, url.rfind('/') + 1));
}

bool has_dot_segment(std::string_view path) {
  for (size_t begin = 0; begin <= path.size();) {
    size_t end = std::min(path.find('/', begin), path.size());
    if (std::string_view segment = path.substr(begin, end - begin); segment == "." || segment == "..") return true;
    begin = end + 1;
  }
  return false;
}

bool is_clean_path(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.find('\0') != std::string_view::npos) return false;
  for (size_t begin = 0; begin <= path.size();) {
    size_t end = std::min(path.find('/', begin), path.size());
    if (std::string_view segment = path.substr(begin, end - begin);
        segment.empty() || segment == "." || segment == "..")
      return false;
    begin = end + 1;
  }
  return true;
}

std::string percent_encode(std::string_view text, bool keep_slash) {
  std::string out;
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/'))
      out += c;
    else
      out += fmt::format("%{:02X}", byte);
  }
  return out;
}

}  // namespace precdetect
