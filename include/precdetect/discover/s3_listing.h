#pragma once
/// One level of an S3 folder, as ListObjectsV2 lists it page by page, held to the rules that keep a listing finite
/// and inside the prefix asked for: botocore's (paginate.py: IsTruncated false is the end; the same continuation
/// token twice is a PaginationError) and more (a token seen before, a truncated page without one, past
/// kMaxListPages pages, a key outside the prefix).

#include <string>
#include <vector>

namespace precdetect {

/// ListObjectsV2 gives at most 1,000 keys a page: 1,000 pages are a million keys at one level of a folder, far more
/// than a model holds; a store that goes on past them (a fresh continuation token for ever) is refused there.
inline constexpr int kMaxListPages = 1000;

/// One level of an S3 folder: its keys, and the prefixes of its sub-folders.
struct S3Level {
  std::vector<std::string> keys;     ///< whole keys, each under the prefix (not the prefix's own marker object)
  std::vector<std::string> folders;  ///< sub-folders' prefixes, each ending with '/'
};

/// `s3://bucket/prefix`'s own level (a delimiter keeps sub-folders' keys out), through the run's texts
/// (net/remote_text.h). Throws Error: kPathEscape (a key outside `prefix`), kRemote (a continuation token seen
/// before, a truncated page without one, more than kMaxListPages pages), and what remote_text throws.
S3Level list_s3_level(const std::string& bucket, const std::string& prefix);

}  // namespace precdetect
