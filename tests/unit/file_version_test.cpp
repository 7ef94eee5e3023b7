// One version of a remote file (net/file_version.h): what pins it, and every validator's change named.
#include "precdetect/net/file_version.h"

#include <gtest/gtest.h>

#include "precdetect/core/error.h"

namespace precdetect {
namespace {

constexpr const char* kUrl = "https://cdn.example/blob";

/// The message of the kRemoteChanged `now` is against `pinned`; "" when none is thrown.
std::string change(const FileVersion& pinned, const FileVersion& now, bool via_own_url) {
  try {
    check_same_version(pinned, now, via_own_url, kUrl);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRemoteChanged);
    return e.what();
  }
  return "";
}

TEST(FileVersion, PinnedByAStrongEtagLastModifiedOrTheHubsLinkedEtag) {
  EXPECT_TRUE((FileVersion{.etag = "\"abc\""}).pinned());
  EXPECT_TRUE((FileVersion{.last_modified = "Thu, 01 Jan 2026 01:00:00 GMT"}).pinned());
  EXPECT_TRUE((FileVersion{.linked_etag = "\"0123\""}).pinned());
  EXPECT_TRUE((FileVersion{.etag = "W/\"1\"", .last_modified = "Thu, 01 Jan 2026 01:00:00 GMT"}).pinned());
  EXPECT_FALSE((FileVersion{.etag = "W/\"1\""}).pinned());  // equivalent content, not the same bytes
  EXPECT_FALSE((FileVersion{.commit = "0123456789abcdef0123456789abcdef01234567"}).pinned());
  EXPECT_FALSE(FileVersion{}.pinned());
  EXPECT_EQ(FileVersion{.etag = "W/\"1\""}.text(), "");  // nothing to key a cache by
}

TEST(FileVersion, TheValidatorsOfAnswersAreTaken) {
  FileVersion version;
  take_hub_validators(version, {{"x-repo-commit", "c1"}, {"x-linked-etag", "\"l1\""}});
  take_hub_validators(version, {{"x-repo-commit", "c2"}});  // the first answer on the way's stay
  take_final_validators(version, {{"etag", "\"e\""}, {"last-modified", "d"}});
  EXPECT_EQ(version.commit, "c1");
  EXPECT_EQ(version.linked_etag, "\"l1\"");
  EXPECT_EQ(version.etag, "\"e\"");
  EXPECT_EQ(version.last_modified, "d");
}

TEST(FileVersion, EachValidatorGivenOtherwiseOrNotAtAllIsAChange) {
  FileVersion pinned{.etag = "W/\"1\"", .last_modified = "Thu, 01 Jan 2026 01:00:00 GMT", .size = 10};
  EXPECT_EQ(change(pinned, pinned, false), "");
  FileVersion weak = pinned;
  weak.etag = "W/\"2\"";
  EXPECT_NE(change(pinned, weak, false).find("its ETag was W/\"1\", now W/\"2\""), std::string::npos);
  FileVersion dated = pinned;
  dated.last_modified = "Thu, 01 Jan 2026 02:00:00 GMT";
  EXPECT_NE(change(pinned, dated, false).find("Last-Modified"), std::string::npos);
  FileVersion undated = pinned;
  undated.last_modified = "";
  EXPECT_NE(change(pinned, undated, false).find("now none"), std::string::npos);
  FileVersion longer = pinned;
  longer.size = 11;
  EXPECT_NE(change(pinned, longer, false).find("its size was 10 bytes, now 11"), std::string::npos);
  // A validator the first read lacked is not asked of a later one.
  EXPECT_EQ(change(FileVersion{.size = 10}, pinned, false), "");
}

TEST(FileVersion, TheHubsValidatorsAreComparedOnAnswersThroughTheHub) {
  FileVersion pinned{.etag = "\"cdn\"", .commit = "c1", .linked_etag = "\"l1\"", .size = 10};
  FileVersion from_the_cdn{.etag = "\"cdn\"", .size = 10};  // a range asked of the CDN names no commit
  EXPECT_EQ(change(pinned, from_the_cdn, false), "");
  FileVersion renewed = pinned;
  renewed.commit = "c2";
  EXPECT_NE(change(pinned, renewed, true).find("commit (X-Repo-Commit)"), std::string::npos);
  renewed = pinned;
  renewed.linked_etag = "\"l2\"";
  EXPECT_NE(change(pinned, renewed, true).find("LFS object (X-Linked-Etag)"), std::string::npos);
}

}  // namespace
}  // namespace precdetect
