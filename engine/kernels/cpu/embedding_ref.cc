// Plain-loop oracle for the token + position embedding (see engine/kernels/embedding.h).
#include <cstdint>

#include "engine/kernels/embedding.h"

namespace accel::kernels::ref {

void EmbeddingForward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                      int64_t B, int64_t T, int64_t C) {
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      float* out_bt = out + (b * T + t) * C;
      const float* wte_row = wte + static_cast<int64_t>(tokens[b * T + t]) * C;
      const float* wpe_row = wpe + t * C;
      for (int64_t c = 0; c < C; ++c) out_bt[c] = wte_row[c] + wpe_row[c];
    }
  }
}

void EmbeddingBackward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                       int64_t B, int64_t T, int64_t C) {
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      const float* dout_bt = dout + (b * T + t) * C;
      float* dwte_row = dwte + static_cast<int64_t>(tokens[b * T + t]) * C;
      float* dwpe_row = dwpe + t * C;
      for (int64_t c = 0; c < C; ++c) {
        dwte_row[c] += dout_bt[c];
        dwpe_row[c] += dout_bt[c];
      }
    }
  }
}

}  // namespace accel::kernels::ref
