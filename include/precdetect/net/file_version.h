#pragma once
/// What names one version of a remote file: the validators its server's answers give (RFC 9110 §8.8), which every
/// later answer of one scan must give alike, so that the bytes of a file read by many ranged requests are of one
/// file. The Hub names a file's version on its resolve answer (X-Repo-Commit, X-Linked-Etag: huggingface_hub's
/// constants.py), its CDN by an ETag.

#include <cstdint>
#include <map>
#include <string>

namespace precdetect {

struct FileVersion {
  std::string etag;           ///< the final answer's ETag as sent; a weak one (W/"...") is compared, pins nothing
  std::string last_modified;  ///< the final answer's Last-Modified as sent
  std::string commit;         ///< X-Repo-Commit of the first answer on the way that had one (the Hub's resolve)
  std::string linked_etag;    ///< X-Linked-Etag of the first answer on the way that had one: an LFS file's SHA-256
  uint64_t size = 0;          ///< the file's size, from Content-Range

  /// True when a validator names these bytes: a strong ETag, Last-Modified (with the size), or the Hub's linked
  /// ETag (with its commit). A weak ETag alone promises equivalent content, not the same bytes (RFC 9110 §8.8.1;
  /// If-Range accepts only a strong one, §13.1.5).
  bool pinned() const;
  /// Every validator in one line, for a results cache's key (the size aside).
  std::string text() const;
};

/// The validators of a final answer's `headers` (names in lower case): its ETag and Last-Modified.
void take_final_validators(FileVersion& version, const std::map<std::string, std::string>& headers);

/// The Hub's validators of an answer on the way (a resolve answer, before its redirect), where `version` has none
/// yet.
void take_hub_validators(FileVersion& version, const std::map<std::string, std::string>& headers);

/// Throws Error(kRemoteChanged) naming `url` and the validator when `now` is not of `pinned`'s version: another
/// size, or a validator `pinned` has that `now` lacks or gives otherwise. The Hub's validators are asked of an answer
/// that came by way of the file's own URL (`via_own_url`: the Hub's resolve, on a first read or a renewed link), and
/// of any other that names them; the final answer's of every answer.
void check_same_version(const FileVersion& pinned, const FileVersion& now, bool via_own_url, const std::string& url);

}  // namespace precdetect
