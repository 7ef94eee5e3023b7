#include "precdetect/net/file_version.h"

#include <fmt/format.h>

#include "precdetect/core/error.h"

namespace precdetect {
namespace {

std::string header(const std::map<std::string, std::string>& headers, const std::string& name) {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

/// Throws when `pinned` gave `what` and `now` gives it otherwise (or not at all).
void check_same(const std::string& pinned, const std::string& now, const char* what, const std::string& url) {
  if (!pinned.empty() && now != pinned)
    throw Error(ErrorCode::kRemoteChanged, fmt::format("{}: the file changed during the scan: its {} was {}, now {}",
                                                       url, what, pinned, now.empty() ? "none" : now));
}

}  // namespace

bool FileVersion::pinned() const {
  bool strong_etag = !etag.empty() && !etag.starts_with("W/");
  return strong_etag || !last_modified.empty() || !linked_etag.empty();
}

std::string FileVersion::text() const {
  if (!pinned()) return "";
  return fmt::format("{}|{}|{}|{}", etag, last_modified, commit, linked_etag);
}

void take_final_validators(FileVersion& version, const std::map<std::string, std::string>& headers) {
  version.etag = header(headers, "etag");
  version.last_modified = header(headers, "last-modified");
}

void take_hub_validators(FileVersion& version, const std::map<std::string, std::string>& headers) {
  if (version.commit.empty()) version.commit = header(headers, "x-repo-commit");
  if (version.linked_etag.empty()) version.linked_etag = header(headers, "x-linked-etag");
}

void check_same_version(const FileVersion& pinned, const FileVersion& now, bool via_own_url, const std::string& url) {
  if (now.size != pinned.size)
    throw Error(
        ErrorCode::kRemoteChanged,
        fmt::format("{}: the file changed during the scan: its size was {} bytes, now {}", url, pinned.size, now.size));
  check_same(pinned.etag, now.etag, "ETag", url);
  check_same(pinned.last_modified, now.last_modified, "Last-Modified", url);
  // A range asked of the CDN comes without the Hub's validators: they are asked of an answer that names them, and of
  // every answer that came through the file's own URL (which must name them again).
  if (via_own_url || !now.commit.empty()) check_same(pinned.commit, now.commit, "commit (X-Repo-Commit)", url);
  if (via_own_url || !now.linked_etag.empty())
    check_same(pinned.linked_etag, now.linked_etag, "LFS object (X-Linked-Etag)", url);
}

}  // namespace precdetect
