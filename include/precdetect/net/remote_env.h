#pragma once
/// What the environment says about reading over the network, by the conventions users already have:
/// huggingface_hub's (HF_ENDPOINT, HF_TOKEN and its token file, HF_HUB_OFFLINE, HF_HUB_DOWNLOAD_TIMEOUT) and the
/// AWS CLI's (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL).

#include <optional>
#include <string>

#include "precdetect/net/url.h"

namespace precdetect {

/// What a request may carry to prove who asks. Sent only to `authority`: a redirect elsewhere (the Hub's CDN)
/// goes without them.
struct HttpCredentials {
  std::string authority;  ///< the one host[:port] they are for
  std::string bearer;     ///< a Hub token, sent as `Authorization: Bearer`
  std::string aws_key;    ///< with aws_secret: requests are signed with AWS SigV4 for S3
  std::string aws_secret;
  std::string aws_session;  ///< a temporary credential's token (x-amz-security-token)
  std::string aws_region;
};

/// The Hub's base URL: HF_ENDPOINT, else https://huggingface.co; without a trailing '/'.
std::string hf_endpoint();

/// True when HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) asks for no network at all.
bool hf_offline();

/// The S3 endpoint requests go to, path-style: AWS_ENDPOINT_URL (an S3-compatible store), else
/// https://s3.REGION.amazonaws.com; without a trailing '/'.
std::string s3_endpoint();

/// True when `url` is on the S3 endpoint's host (s3_endpoint()): its path is a bucket and an object key, an opaque
/// string (`run-42/../x.bin` is a key of its own under `run-42/`), sent exactly as written and signed so, never
/// normalized as a URL path's dot segments are.
bool is_s3_url(const Url& url);

/// The http(s) URL an input names a file by: an http(s) URL as it is, `s3://bucket/key` as the S3 endpoint's
/// path-style URL of the object; nullopt for anything else (a local path, hf://).
std::optional<std::string> http_url_of(std::string_view input);

/// Seconds a transfer may go without receiving a byte (and a connection may take): HF_HUB_DOWNLOAD_TIMEOUT, else 10.
long download_timeout_seconds();

/// The credentials the environment holds for `url`'s host: the Hub token (HF_TOKEN, else the file huggingface_hub
/// writes: HF_TOKEN_PATH, else $HF_HOME/token, else
/// $XDG_CACHE_HOME/huggingface/token, else ~/.cache/huggingface/token) for HF_ENDPOINT's host; the AWS
/// keys for s3_endpoint()'s host. nullopt for any other host.
std::optional<HttpCredentials> credentials_for(const Url& url);

}  // namespace precdetect
