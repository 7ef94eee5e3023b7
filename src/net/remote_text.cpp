#include "precdetect/net/remote_text.h"

#include <utility>

#include "precdetect/net/http.h"
#include "precdetect/net/remote_env.h"
#include "precdetect/net/url.h"

namespace precdetect {
namespace {

thread_local RemoteTexts* t_texts = nullptr;

}  // namespace

RemoteTexts::Scope::Scope(RemoteTexts& texts) : previous_(std::exchange(t_texts, &texts)) {}

RemoteTexts::Scope::~Scope() { t_texts = previous_; }

std::string remote_text(const std::string& url, uint64_t max_bytes) {
  RemoteTexts* texts = t_texts;
  if (texts) {
    std::lock_guard lock(texts->mutex_);
    if (auto kept = texts->texts_.find(url); kept != texts->texts_.end() && kept->second.size() <= max_bytes)
      return kept->second;
  }
  std::string body =
      http_get({.url = url, .credentials = credentials_for(*parse_http_url(url)), .max_body = max_bytes}).body;
  if (texts) {
    std::lock_guard lock(texts->mutex_);
    if (texts->kept_ + body.size() <= RemoteTexts::kMaxKept && texts->texts_.emplace(url, body).second)
      texts->kept_ += body.size();
  }
  return body;
}

}  // namespace precdetect
