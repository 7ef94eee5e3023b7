#include "precdetect/load/archive_member.h"

#include <fmt/format.h>

#include <vector>

namespace precdetect {
namespace {

bool is_absolute(std::string_view path) {
  return path.starts_with('/') || path.starts_with('\\') || (path.size() >= 2 && path[1] == ':');
}

/// The components of `path`, split at either separator (Windows' unzip and tar read `\` as one).
std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t at = 0; at <= path.size(); ++at)
    if (at == path.size() || path[at] == '/' || path[at] == '\\') {
      parts.push_back(path.substr(start, at - start));
      start = at + 1;
    }
  return parts;
}

/// True when `path`, walked from a folder `depth` components below the extraction folder, climbs above it.
bool climbs_out(std::string_view path, long depth) {
  for (std::string_view part : components(path)) {
    if (part == "..")
      --depth;
    else if (!part.empty() && part != ".")
      ++depth;
    if (depth < 0) return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> member_name_escape(std::string_view name) {
  if (is_absolute(name)) return fmt::format("member `{}` has an absolute name", name);
  if (climbs_out(name, 0)) return fmt::format("member `{}` climbs out of the extraction folder", name);
  return std::nullopt;
}

std::optional<std::string> link_member_escape(std::string_view name, std::string_view target, bool hard) {
  std::string_view kind = hard ? "hard link" : "symbolic link";
  if (is_absolute(target)) return fmt::format("{} member `{}` points at the absolute path `{}`", kind, name, target);
  std::vector<std::string_view> folder = components(name);
  long depth = 0;
  if (!hard)  // a symbolic link resolves from its own folder: the member's name less its last part
    for (size_t i = 0; i + 1 < folder.size(); ++i) depth += folder[i].empty() || folder[i] == "." ? 0 : 1;
  if (climbs_out(target, depth))
    return fmt::format("{} member `{}` points out of the extraction folder: `{}`", kind, name, target);
  return std::nullopt;
}

}  // namespace precdetect
