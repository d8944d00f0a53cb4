// Token comparison for acceld's gRPC and HTTP sides: without an early exit, so the time a wrong
// token takes does not reveal how much of it was right.
#pragma once

#include <string>

namespace accel::server {

inline bool SameSecret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace accel::server
