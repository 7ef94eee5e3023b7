#pragma once
/// SHA-256 over bytes given piece by piece (OpenSSL's libcrypto): --verify's hash, of a local file read through
/// or of a remote one as its scan reads it.

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace precdetect {

class Sha256 {
 public:
  Sha256();
  void update(std::span<const std::byte> bytes);
  /// The digest of every byte given, lowercase hex; the hash is not to be updated after.
  std::string hex_digest();

 private:
  std::unique_ptr<void, void (*)(void*)> context_;
};

/// True for 64 lowercase hex digits: what a SHA-256 is spelled as in sha256sum's output and the Hub's LFS metadata.
bool is_sha256(std::string_view text);

}  // namespace precdetect
