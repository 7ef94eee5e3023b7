#include "precdetect/discover/s3_listing.h"

#include <fmt/format.h>

#include <set>

#include "precdetect/core/error.h"
#include "precdetect/net/remote_env.h"
#include "precdetect/net/remote_text.h"
#include "precdetect/net/url.h"
#include "precdetect/net/xml_text.h"

namespace precdetect {
namespace {

/// A page's keys into `level`: each must lie under the prefix asked (a store that lists another key would have us
/// read outside the model's prefix); the prefix's own key (a folder's marker object) and sub-folders' markers are
/// no files.
void add_keys(S3Level& level, const std::string& url, const std::string& prefix, const std::string& xml) {
  for (std::string& key : xml_element_texts(xml, "Key")) {
    if (!key.starts_with(prefix))
      fail(ErrorCode::kPathEscape, url,
           fmt::format("the listing names the key `{}`, outside the prefix `{}` asked for", key, prefix));
    if (key.size() > prefix.size() && !key.ends_with('/')) level.keys.push_back(std::move(key));
  }
  // The answer's own <Prefix> is the one asked; each sub-folder's is a longer one, ending with the delimiter.
  for (std::string& folder : xml_element_texts(xml, "Prefix"))
    if (folder.size() > prefix.size() && folder.starts_with(prefix) && folder.ends_with('/'))
      level.folders.push_back(std::move(folder));
}

/// The continuation token a page gives, empty at the listing's end. A truncated page with no token would cut the
/// listing short (botocore reads it as the end); a token seen before (the last one, or a cycle) and a page past
/// kMaxListPages would list for ever.
std::string next_token(const std::string& url, const std::string& xml, std::set<std::string>& seen, int page) {
  std::vector<std::string> truncated = xml_element_texts(xml, "IsTruncated");
  if (truncated.empty() || truncated.front() != "true") return "";
  std::vector<std::string> next = xml_element_texts(xml, "NextContinuationToken");
  if (next.empty() || next.front().empty())
    fail(ErrorCode::kRemote, url, "the listing says it is truncated and gives no continuation token");
  if (!seen.insert(next.front()).second)
    fail(ErrorCode::kRemote, url,
         fmt::format("the listing gives the continuation token `{}` again: it would list for ever", next.front()));
  if (page + 1 >= kMaxListPages)
    fail(ErrorCode::kRemote, url,
         fmt::format("the listing goes on past {} pages (of up to 1,000 keys each): refused", kMaxListPages));
  return next.front();
}

}  // namespace

S3Level list_s3_level(const std::string& bucket, const std::string& prefix) {
  S3Level level;
  std::string token;
  std::set<std::string> seen;
  // The query is SigV4's canonical one as it stands (libcurl 7.88 signs it as written): its parameters in name
  // order, each value percent-encoded whole, '/' too (a `/` left as it is is signed as `/`, where S3 and SeaweedFS
  // sign `%2F`, and the request is refused; moto's server lets it pass).
  for (int page = 0;; ++page) {
    std::string query = fmt::format("delimiter=%2F&list-type=2&prefix={}", percent_encode(prefix, false));
    if (!token.empty()) query = fmt::format("continuation-token={}&{}", percent_encode(token, false), query);
    std::string url = fmt::format("{}/{}?{}", s3_endpoint(), bucket, query);
    std::string xml = remote_text(url, "S3 ListObjectsV2");
    add_keys(level, url, prefix, xml);
    token = next_token(url, xml, seen, page);
    if (token.empty()) return level;
  }
}

}  // namespace precdetect
