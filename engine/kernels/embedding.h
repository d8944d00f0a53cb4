// Token + position embedding.
//   out (B, T, C) = wte[tokens[b, t]] + wpe[t]
// Backward accumulates (+=) into dwte (V, C) and dwpe (maxT, C). Tokens must already be
// validated to lie in [0, V); T <= maxT.
// kernels::ref is the plain-loop oracle; kernels:: the fast path (same signatures).
#pragma once

#include <cstdint>

namespace accel::kernels {

#define ACCEL_EMBEDDING_KERNELS                                                             \
  void EmbeddingForward(float* out, const int32_t* tokens, const float* wte, const float* wpe, \
                        int64_t B, int64_t T, int64_t C);                                     \
  void EmbeddingBackward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,  \
                         int64_t B, int64_t T, int64_t C);

ACCEL_EMBEDDING_KERNELS
namespace ref {
ACCEL_EMBEDDING_KERNELS
}  // namespace ref

}  // namespace accel::kernels
