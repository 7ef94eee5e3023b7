#include "precdetect/core/sha256.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>

#include "precdetect/core/error.h"

namespace precdetect {

Sha256::Sha256() : context_(EVP_MD_CTX_new(), [](void* c) { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(c)); }) {
  if (!context_ || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(context_.get()), EVP_sha256(), nullptr) != 1)
    throw Error(ErrorCode::kInternal, "OpenSSL has no SHA-256");
}

void Sha256::update(std::span<const std::byte> bytes) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(context_.get()), bytes.data(), bytes.size());
}

std::string Sha256::hex_digest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(context_.get()), digest, &length);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

bool is_sha256(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
         });
}

}  // namespace precdetect
