// URLs of remote models (core/url.h) and the credentials the environment binds to a host (core/remote_env.h).
#include "precdetect/net/url.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "precdetect/net/remote_env.h"
#include "precdetect/net/xml_text.h"

namespace precdetect {
namespace {

TEST(Url, SplitsSchemeAuthorityPathAndQuery) {
  std::optional<Url> url = parse_http_url("https://cdn.example:8443/a/b.safetensors?sig=1#frag");
  ASSERT_TRUE(url);
  EXPECT_EQ(url->scheme, "https");
  EXPECT_EQ(url->authority, "cdn.example:8443");
  EXPECT_EQ(url->path, "/a/b.safetensors");
  EXPECT_EQ(url->query, "sig=1");
  EXPECT_EQ(url->text(), "https://cdn.example:8443/a/b.safetensors?sig=1");
  EXPECT_EQ(parse_http_url("http://host")->path, "/");
}

TEST(Url, RefusesWhatIsNoHttpUrl) {
  EXPECT_FALSE(parse_http_url("hf://org/name"));
  EXPECT_FALSE(parse_http_url("ftp://host/file"));
  EXPECT_FALSE(parse_http_url("http:///path"));
  EXPECT_FALSE(parse_http_url("https://user:secret@host/file"));  // a credential in a URL goes to whoever the host is
  EXPECT_FALSE(parse_http_url("model.safetensors"));
}

TEST(Url, KnowsRemoteInputs) {
  for (const char* remote : {"hf://org/name", "s3://bucket/key", "https://h/x", "http://h/x"})
    EXPECT_TRUE(is_url(remote)) << remote;
  for (const char* local : {"org/name", "./hf://x", "/tmp/model.safetensors", "s3:/bucket"})
    EXPECT_FALSE(is_url(local)) << local;
}

TEST(Url, ResolvesRedirects) {
  Url base = *parse_http_url("https://hub.example/org/name/resolve/main/model.safetensors");
  EXPECT_EQ(resolve_location(base, "https://cdn.example/blob?x=1"), "https://cdn.example/blob?x=1");
  EXPECT_EQ(resolve_location(base, "/api/other"), "https://hub.example/api/other");
  EXPECT_EQ(resolve_location(base, "//cdn.example/blob"), "https://cdn.example/blob");
  EXPECT_EQ(resolve_location(base, "other.bin"), "https://hub.example/org/name/resolve/main/other.bin");
}

TEST(Url, NamesFilesAndFolders) {
  EXPECT_EQ(url_file_name("https://h/a/model.safetensors.index.json?x=/y"), "model.safetensors.index.json");
  EXPECT_EQ(url_folder("https://h/a/model.safetensors.index.json"), "https://h/a/");
  EXPECT_EQ(percent_encode("run 42/model+1.bin", true), "run%2042/model%2B1.bin");
  EXPECT_EQ(percent_encode("refs/pr/1", false), "refs%2Fpr%2F1");
}

TEST(RemoteEnv, TheHubTokenGoesToTheHubsHostOnly) {
  ::setenv("HF_ENDPOINT", "http://127.0.0.1:9000/", 1);
  ::setenv("HF_TOKEN", "hf_secret", 1);
  EXPECT_EQ(hf_endpoint(), "http://127.0.0.1:9000");
  std::optional<HttpCredentials> hub = credentials_for(*parse_http_url("http://127.0.0.1:9000/api/models/a/b"));
  ASSERT_TRUE(hub);
  EXPECT_EQ(hub->bearer, "hf_secret");
  EXPECT_EQ(hub->authority, "127.0.0.1:9000");
  EXPECT_FALSE(credentials_for(*parse_http_url("http://127.0.0.1:9001/blob")));  // the CDN: another port
  ::unsetenv("HF_ENDPOINT");
  ::unsetenv("HF_TOKEN");
}

TEST(Url, HubUrlsSplitIntoRepositoryAndRevision) {
  std::optional<HubRef> plain = parse_hub_url("hf://EleutherAI/pythia-410m");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->repo, "EleutherAI/pythia-410m");
  EXPECT_EQ(plain->revision, "main");
  EXPECT_EQ(plain->folder, "");
  std::optional<HubRef> pinned = parse_hub_url("hf://org/name@refs%2Fpr%2F1/unet/");
  ASSERT_TRUE(pinned);
  EXPECT_EQ(pinned->repo, "org/name");
  EXPECT_EQ(pinned->revision, "refs/pr/1");
  EXPECT_EQ(pinned->folder, "unet");
  std::optional<HubRef> component = parse_hub_url("hf://org/name/a/b");
  ASSERT_TRUE(component);
  EXPECT_EQ((std::pair{component->revision, component->folder}), (std::pair<std::string, std::string>{"main", "a/b"}));
  for (const char* bad : {"hf://", "hf://name", "hf://org/", "hf:///name", "hf://org/@main", "hf://org/name@",
                          "hf://org/name@%2", "hf://org/name@/unet", "org/name", "s3://org/name",
                          // no git ref has a dot segment, and the API's URL would lose it: another revision
                          "hf://org/name@..", "hf://org/name@.", "hf://org/name@refs%2F..%2Fmain"})
    EXPECT_FALSE(parse_hub_url(bad)) << bad;
}

TEST(XmlText, ElementTextsDecodeEntitiesAndCharacterReferencesOnce) {
  // As SeaweedFS writes a key holding `'` and `&`; `&amp;lt;` is the text `&lt;`, never `<`.
  std::string xml =
      "<R><Prefix>p/</Prefix><Key>a &#39;b&#39; &amp; &#x263A; &amp;lt;</Key><Key>&bogus; &#0; &#xD800; &</Key>"
      "<Key>unterminated";
  EXPECT_EQ(xml_element_texts(xml, "Key"),
            (std::vector<std::string>{"a 'b' & \u263A &lt;", "&bogus; &#0; &#xD800; &"}));
  EXPECT_EQ(xml_element_texts(xml, "Prefix"), std::vector<std::string>{"p/"});
}

TEST(RemoteEnv, AwsKeysGoToTheS3EndpointOnly) {
  ::setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000", 1);
  ::setenv("AWS_ACCESS_KEY_ID", "key", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
  std::optional<HttpCredentials> s3 = credentials_for(*parse_http_url("http://127.0.0.1:5000/bucket/key"));
  ASSERT_TRUE(s3);
  EXPECT_EQ(s3->aws_key, "key");
  EXPECT_EQ(s3->aws_region, "us-east-1");
  EXPECT_FALSE(credentials_for(*parse_http_url("http://example.org/bucket/key")));
  for (const char* name : {"AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}) ::unsetenv(name);
}

TEST(Url, FindsDotSegments) {
  for (const char* dotted : {".", "..", "./x", "a/../b", "a/./b", "a/..", "a/."}) EXPECT_TRUE(has_dot_segment(dotted));
  for (const char* plain : {"", "a/b", ".hidden/x", "a/..b", "a/b..", "...", "a//b", "v1.0/model.safetensors"})
    EXPECT_FALSE(has_dot_segment(plain)) << plain;
}

TEST(RemoteEnv, AnS3KeyIsWrittenWithItsDotSegments) {
  // `run-42/../secret.bin` is a key under `run-42/`, not `secret.bin`: its URL keeps the segments, and requests to
  // the S3 endpoint are sent with the path as written (core/http.cpp: CURLOPT_PATH_AS_IS).
  ::setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000/", 1);
  EXPECT_EQ(http_url_of("s3://bucket/run-42/../secret.bin"), "http://127.0.0.1:5000/bucket/run-42/../secret.bin");
  EXPECT_EQ(http_url_of("s3://bucket/run-42/./x y.safetensors"),
            "http://127.0.0.1:5000/bucket/run-42/./x%20y.safetensors");
  EXPECT_TRUE(is_s3_url(*parse_http_url("http://127.0.0.1:5000/bucket/run-42/../secret.bin")));
  EXPECT_FALSE(is_s3_url(*parse_http_url("http://127.0.0.1:5001/bucket/key")));  // another port: a plain URL
  EXPECT_FALSE(is_s3_url(*parse_http_url("https://huggingface.co/org/name/resolve/main/a/../b")));
  ::unsetenv("AWS_ENDPOINT_URL");
}

TEST(RemoteEnv, OfflineAndTimeout) {
  ::setenv("HF_HUB_OFFLINE", "1", 1);
  EXPECT_TRUE(hf_offline());
  ::setenv("HF_HUB_OFFLINE", "0", 1);
  EXPECT_FALSE(hf_offline());
  ::unsetenv("HF_HUB_OFFLINE");
  ::setenv("HF_HUB_DOWNLOAD_TIMEOUT", "3", 1);
  EXPECT_EQ(download_timeout_seconds(), 3);
  ::unsetenv("HF_HUB_DOWNLOAD_TIMEOUT");
  EXPECT_EQ(download_timeout_seconds(), 10);
}

}  // namespace
}  // namespace precdetect
