// Fast RoPE: OpenMP over the B * T rows; within a row, the H + KV rotated heads are contiguous
// (q then k), and each head's rotation is a vector loop over its D / 2 pairs reading one row of
// the table. Forward and backward differ only in the sign of sin.
#include <cmath>
#include <cstdint>

#include "engine/kernels/rope.h"

namespace accel::kernels {
namespace {

// Below this many rotated elements the loops stay on one thread: a parallel region costs a few
// microseconds, more than the loop itself.
constexpr int64_t kParallelMinElems = int64_t{1} << 15;

template <bool kInverse>
void Rotate(float* qkv, const float* cos, const float* sin, int64_t B, int64_t T, int64_t H,
            int64_t KV, int64_t D) {
  const int64_t half = D / 2, row = (H + 2 * KV) * D, heads = H + KV;
#pragma omp parallel for schedule(static) if (B * T * heads * D >= kParallelMinElems)
  for (int64_t bt = 0; bt < B * T; ++bt) {
    const int64_t t = bt % T;
    const float* c = cos + t * half;
    const float* s = sin + t * half;
    for (int64_t h = 0; h < heads; ++h) {
      float* x1 = qkv + bt * row + h * D;
      float* x2 = x1 + half;
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        const float si = kInverse ? -s[i] : s[i];
        const float a = x1[i], b = x2[i];
        x1[i] = a * c[i] - b * si;
        x2[i] = b * c[i] + a * si;
      }
    }
  }
}

}  // namespace

void RopeTable(float* cos, float* sin, const float* inv_freq, int64_t T, int64_t D) {
  const int64_t half = D / 2;
#pragma omp parallel for schedule(static) if (T * half >= kParallelMinElems)
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(t) * inv_freq[i];  // see rope.h: double angle
      cos[t * half + i] = static_cast<float>(std::cos(angle));
      sin[t * half + i] = static_cast<float>(std::sin(angle));
    }
  }
}

void RopeForward(float* qkv, const float* cos, const float* sin, int64_t B, int64_t T, int64_t H,
                 int64_t KV, int64_t D) {
  Rotate<false>(qkv, cos, sin, B, T, H, KV, D);
}

void RopeBackward(float* dqkv, const float* cos, const float* sin, int64_t B, int64_t T,
                  int64_t H, int64_t KV, int64_t D) {
  Rotate<true>(dqkv, cos, sin, B, T, H, KV, D);
}

}  // namespace accel::kernels
