#include "precdetect/net/text_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "precdetect/core/error.h"
#include "precdetect/core/open_file.h"
#include "precdetect/net/remote_env.h"
#include "precdetect/net/remote_text.h"

namespace precdetect {

std::string read_text_file(const std::filesystem::path& path, std::string_view what, TextOrigin origin) {
  bool list = origin == TextOrigin::kList;
  uint64_t max_bytes = list ? uint64_t{1} << 30 : uint64_t{64} << 20;
  // Beside a remote model's weights, or a --from list in a bucket.
  if (std::optional<std::string> url = http_url_of(path.native())) return remote_text(*url, what, max_bytes);
  OpenFile file =
      origin == TextOrigin::kModel ? open_for_reading(path, what) : open_user_file(path, what, /*allow_pipe=*/list);
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    ssize_t got = ::read(file.fd(), buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(ErrorCode::kIo, path, fmt::format("cannot read {}: {}", what, std::strerror(errno)));
    if (got == 0) return text;
    if (text.size() + static_cast<uint64_t>(got) > max_bytes)
      fail(ErrorCode::kIo, path, fmt::format("{} is larger than {} MiB", what, max_bytes >> 20));
    text.append(buffer, static_cast<size_t>(got));
  }
}

}  // namespace precdetect
