// SHA-256 (OpenSSL's EVP digest) for the dataset cache: the key of a prepared dataset and the
// provenance in its manifest are content hashes of the source files and the tokenizer files.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace accel::data {

// Incremental SHA-256. Not thread-safe; one per stream of bytes.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(std::string_view bytes);
  // The digest as 64 lowercase hex digits; the object is spent afterwards.
  std::string HexDigest();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

std::string Sha256Hex(std::string_view bytes);

}  // namespace accel::data
