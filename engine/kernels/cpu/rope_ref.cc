// Plain-loop oracle for RoPE (see engine/kernels/rope.h): one head at a time, each rotation
// computed in double and rounded once.
#include <cmath>
#include <cstdint>

#include "engine/kernels/rope.h"

namespace accel::kernels::ref {
namespace {

// Rotates the first H + KV heads (q then k, contiguous) of every row by the table's angle at
// the row's position, times `sign` (+1 forward, -1 for the transpose).
void Rotate(float* qkv, const float* cos, const float* sin, int64_t B, int64_t T, int64_t H,
            int64_t KV, int64_t D, double sign) {
  const int64_t half = D / 2, row = (H + 2 * KV) * D;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t h = 0; h < H + KV; ++h) {
        float* x = qkv + (b * T + t) * row + h * D;
        for (int64_t i = 0; i < half; ++i) {
          const double c = cos[t * half + i], s = sign * sin[t * half + i];
          const double x1 = x[i], x2 = x[i + half];
          x[i] = static_cast<float>(x1 * c - x2 * s);
          x[i + half] = static_cast<float>(x2 * c + x1 * s);
        }
      }
    }
  }
}

}  // namespace

void RopeTable(float* cos, float* sin, const float* inv_freq, int64_t T, int64_t D) {
  const int64_t half = D / 2;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(t) * inv_freq[i];
      cos[t * half + i] = static_cast<float>(std::cos(angle));
      sin[t * half + i] = static_cast<float>(std::sin(angle));
    }
  }
}

void RopeForward(float* qkv, const float* cos, const float* sin, int64_t B, int64_t T, int64_t H,
                 int64_t KV, int64_t D) {
  Rotate(qkv, cos, sin, B, T, H, KV, D, 1.0);
}

void RopeBackward(float* dqkv, const float* cos, const float* sin, int64_t B, int64_t T,
                  int64_t H, int64_t KV, int64_t D) {
  Rotate(dqkv, cos, sin, B, T, H, KV, D, -1.0);
}

}  // namespace accel::kernels::ref
