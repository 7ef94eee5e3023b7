#include "precdetect/net/remote_env.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "precdetect/core/error.h"
#include "precdetect/core/whole_number.h"

namespace precdetect {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

std::string without_trailing_slash(std::string text) {
  while (text.ends_with('/')) text.pop_back();
  return text;
}

/// huggingface_hub's token file, where `hf auth login` keeps it.
std::string hf_token_file() {
  std::string path = env("HF_TOKEN_PATH");
  if (path.empty() && !env("HF_HOME").empty()) path = env("HF_HOME") + "/token";
  if (path.empty() && !env("XDG_CACHE_HOME").empty()) path = env("XDG_CACHE_HOME") + "/huggingface/token";
  if (path.empty() && !env("HOME").empty()) path = env("HOME") + "/.cache/huggingface/token";
  std::ifstream file(path);
  std::string token;
  std::getline(file, token);
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  return token;
}

std::string hf_token() {
  std::string token = env("HF_TOKEN");
  return token.empty() ? hf_token_file() : token;
}

std::string authority_of(const std::string& base) {
  std::optional<Url> url = parse_http_url(base);
  return url ? url->authority : std::string();
}

/// The variable `name` as a positive whole number; `otherwise` when it is unset or empty.
long positive_number(const char* name, long otherwise) {
  std::string value = env(name);
  if (value.empty()) return otherwise;
  std::optional<long> number = whole_number<long>(value);
  if (!number || *number <= 0)
    throw Error(ErrorCode::kRemote, fmt::format("{}=`{}` is not a positive whole number", name, value));
  return *number;
}

bool truthy(const std::string& value) { return value == "1" || value == "ON" || value == "YES" || value == "TRUE"; }

}  // namespace

std::string hf_endpoint() {
  std::string endpoint = env("HF_ENDPOINT");
  return without_trailing_slash(endpoint.empty() ? "https://huggingface.co" : endpoint);
}

bool hf_offline() {
  auto upper = [](std::string text) {
    for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return text;
  };
  return truthy(upper(env("HF_HUB_OFFLINE"))) || truthy(upper(env("TRANSFORMERS_OFFLINE")));
}

std::string s3_endpoint() {
  std::string endpoint = env("AWS_ENDPOINT_URL_S3");
  if (endpoint.empty()) endpoint = env("AWS_ENDPOINT_URL");
  if (!endpoint.empty()) return without_trailing_slash(endpoint);
  std::string region = env("AWS_REGION").empty() ? env("AWS_DEFAULT_REGION") : env("AWS_REGION");
  return "https://s3." + (region.empty() ? std::string("us-east-1") : region) + ".amazonaws.com";
}

bool is_s3_url(const Url& url) { return url.authority == authority_of(s3_endpoint()); }

std::optional<std::string> http_url_of(std::string_view input) {
  if (parse_http_url(input)) return std::string(input);
  if (!input.starts_with("s3://")) return std::nullopt;
  std::string_view object = input.substr(std::string_view("s3://").size());
  size_t slash = object.find('/');
  if (slash == 0 || slash == std::string_view::npos) return std::nullopt;
  return s3_endpoint() + "/" + std::string(object.substr(0, slash)) + "/" +
         percent_encode(object.substr(slash + 1), /*keep_slash=*/true);
}

TransferLimits transfer_limits() {
  TransferLimits limits;
  limits.interval_seconds = positive_number("HF_HUB_DOWNLOAD_TIMEOUT", limits.interval_seconds);
  limits.low_speed_limit = positive_number("PRECDETECT_LOW_SPEED_LIMIT", static_cast<long>(limits.low_speed_limit));
  limits.deadline_seconds = positive_number("PRECDETECT_TRANSFER_DEADLINE", limits.deadline_seconds);
  return limits;
}

std::optional<HttpCredentials> credentials_for(const Url& url) {
  if (url.authority == authority_of(hf_endpoint())) {
    std::string token = hf_token();
    if (!token.empty()) return HttpCredentials{.authority = url.authority, .bearer = token};
  }
  if (is_s3_url(url) && !env("AWS_ACCESS_KEY_ID").empty()) {
    std::string region = env("AWS_REGION").empty() ? env("AWS_DEFAULT_REGION") : env("AWS_REGION");
    return HttpCredentials{.authority = url.authority,
                           .aws_key = env("AWS_ACCESS_KEY_ID"),
                           .aws_secret = env("AWS_SECRET_ACCESS_KEY"),
                           .aws_session = env("AWS_SESSION_TOKEN"),
                           .aws_region = region.empty() ? "us-east-1" : region};
  }
  return std::nullopt;
}

}  // namespace precdetect
