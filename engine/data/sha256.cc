#include "engine/data/sha256.h"

#include <openssl/evp.h>

#include "absl/strings/escaping.h"

namespace accel::data {

struct Sha256::Ctx {
  EVP_MD_CTX* md = nullptr;
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr);
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_->md); }

void Sha256::Update(std::string_view bytes) {
  EVP_DigestUpdate(ctx_->md, bytes.data(), bytes.size());
}

std::string Sha256::HexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_->md, digest, &n);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), static_cast<size_t>(n)));
}

std::string Sha256Hex(std::string_view bytes) {
  Sha256 h;
  h.Update(bytes);
  return h.HexDigest();
}

}  // namespace accel::data
