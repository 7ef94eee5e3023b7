#include "precdetect/app/verify.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>

#include "precdetect/core/error.h"
#include "precdetect/core/open_file.h"
#include "precdetect/core/sha256.h"
#include "precdetect/net/text_file.h"
#include "precdetect/net/url.h"

namespace precdetect {
namespace fs = std::filesystem;
namespace {

constexpr size_t kChunk = 1 << 20;

fs::path canonical_or_absolute(const fs::path& path) {
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(path, ec);
  return ec ? fs::absolute(path) : canonical;
}

}  // namespace

Manifest read_manifest(const fs::path& path) {
  Manifest manifest;
  std::string text = read_text_file(path, "--verify manifest", TextOrigin::kList);
  size_t number = 0;
  for (size_t at = 0; at < text.size();) {
    size_t end = std::min(text.find('\n', at), text.size());
    std::string line = text.substr(at, end - at);
    at = end + 1;
    ++number;
    if (line.empty()) continue;
    std::string hash = line.substr(0, 64);
    std::transform(hash.begin(), hash.end(), hash.begin(), [](unsigned char c) { return std::tolower(c); });
    if (!is_sha256(hash) || line.size() < 67 || line[64] != ' ' || (line[65] != ' ' && line[65] != '*'))
      fail(ErrorCode::kIo, path, fmt::format("line {}: not `SHA256  PATH` (sha256sum's format)", number));
    fs::path file = line.substr(66);
    manifest[canonical_or_absolute(file.is_absolute() ? file : path.parent_path() / file)] = hash;
  }
  return manifest;
}

std::optional<std::string> expected_sha256(const fs::path& file, const Manifest& manifest) {
  if (auto listed = manifest.find(canonical_or_absolute(file)); listed != manifest.end()) return listed->second;
  std::error_code ec;
  if (!fs::is_symlink(file, ec)) return std::nullopt;
  fs::path target = fs::read_symlink(file, ec);  // snapshots/REV/NAME -> ../../blobs/SHA256 for an LFS file
  std::string blob = target.filename().string();
  if (ec || target.parent_path().filename() != "blobs" || !is_sha256(blob)) return std::nullopt;
  return blob;
}

std::string sha256_of_file(const fs::path& file) {
  // Through open_for_reading: beneath the model's root when its scan's confinement is on (gates.cpp).
  OpenFile in = open_for_reading(file, "file to verify");
  Sha256 hash;
  std::string buffer(kChunk, '\0');
  for (ssize_t got; (got = ::read(in.fd(), buffer.data(), buffer.size())) != 0;) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(ErrorCode::kIo, file, fmt::format("read failed while verifying it: {}", std::strerror(errno)));
    hash.update(std::as_bytes(std::span(buffer.data(), static_cast<size_t>(got))));
  }
  return hash.hex_digest();
}

namespace {

std::string mismatch(const std::string& file, const std::string& actual, const std::string& expected) {
  return fmt::format("{}: SHA-256 {} differs from the expected {} (--verify)", file, actual, expected);
}

/// Why remote `file` fails --verify, from what its scan's hash came to; nullopt when it matched.
std::optional<std::string> streamed_failure(const std::string& file, std::span<const StreamedDigest> streamed) {
  auto digest = std::find_if(streamed.begin(), streamed.end(), [&](const auto& d) { return d.url == file; });
  if (digest == streamed.end()) return fmt::format("{}: not verified: the scan did not read it (--verify)", file);
  if (digest->expected.empty())
    return fmt::format(
        "{}: no SHA-256 to check it against (its server names none: the Hub names an LFS file's in X-Linked-Etag) "
        "(--verify)",
        file);
  if (!digest->actual)
    return fmt::format("{}: not verified: the scan read {} of its {} bytes{} (--verify)", file, digest->hashed,
                       digest->size, digest->unread.empty() ? "" : fmt::format(", then {}", digest->unread));
  if (*digest->actual == digest->expected) return std::nullopt;
  return mismatch(file, *digest->actual, digest->expected);
}

/// Why `file` fails --verify, or nullopt when its SHA-256 is the one expected.
std::optional<std::string> verify_failure(const std::string& file, const Manifest& manifest,
                                          std::span<const StreamedDigest> streamed) {
  if (is_url(file)) return streamed_failure(file, streamed);
  std::optional<std::string> expected = expected_sha256(file, manifest);
  if (!expected)
    return fmt::format(
        "{}: no SHA-256 to check it against (neither an HF cache LFS blob nor in the manifest) (--verify)", file);
  try {
    std::string actual = sha256_of_file(file);
    if (actual == *expected) return std::nullopt;
    return mismatch(file, actual, *expected);
  } catch (const Error& e) {
    return fmt::format("{} (--verify)", e.what());
  }
}

}  // namespace

std::vector<GateFailure> verify_files(const std::vector<std::string>& files, const Manifest& manifest,
                                      std::span<const StreamedDigest> streamed) {
  std::vector<GateFailure> failures;
  for (const std::string& file : files)
    if (std::optional<std::string> reason = verify_failure(file, manifest, streamed))
      failures.push_back({.gate = Gate::kVerify, .reason = std::move(*reason), .file = file});
  return failures;
}

}  // namespace precdetect
