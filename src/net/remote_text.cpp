#include "precdetect/net/remote_text.h"

#include <fmt/format.h>

#include <utility>

#include "precdetect/net/remote_env.h"
#include "precdetect/net/url.h"

namespace precdetect {
namespace {

thread_local RemoteTexts* t_texts = nullptr;

}  // namespace

RemoteTexts::Scope::Scope(RemoteTexts& texts) : previous_(std::exchange(t_texts, &texts)) {}

RemoteTexts::Scope::~Scope() { t_texts = previous_; }

HttpResponse http_get_in_run(const HttpRequest& request, std::span<std::byte> into) {
  RemoteTexts* texts = t_texts;
  if (texts) {
    std::lock_guard lock(texts->mutex_);
    if (auto failed = texts->failures_.find(request.url); failed != texts->failures_.end()) throw failed->second;
  }
  try {
    return http_get(request, into);
  } catch (const Error& e) {
    if (texts) {
      std::lock_guard lock(texts->mutex_);
      texts->failures_.emplace(request.url, e);
    }
    throw;
  }
}

std::string remote_text(const std::string& url, std::string_view what, uint64_t max_bytes) {
  RemoteTexts* texts = t_texts;
  if (texts) {
    std::lock_guard lock(texts->mutex_);
    if (auto kept = texts->texts_.find(url); kept != texts->texts_.end() && kept->second.size() <= max_bytes)
      return kept->second;
  }
  std::string body;
  try {
    body =
        http_get_in_run({.url = url, .credentials = credentials_for(*parse_http_url(url)), .max_body = max_bytes}).body;
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("{} ({})", e.what(), what));
  }
  if (texts) {
    std::lock_guard lock(texts->mutex_);
    if (texts->kept_ + body.size() <= RemoteTexts::kMaxKept && texts->texts_.emplace(url, body).second)
      texts->kept_ += body.size();
  }
  return body;
}

}  // namespace precdetect
