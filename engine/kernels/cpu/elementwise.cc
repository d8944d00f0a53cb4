// Fast GELU (tanh form) and residual add: OpenMP-parallel vector loops.
//
// GELU is evaluated through the logistic function: with e = exp(-2|u|) in (0, 1],
//   s = 0.5 (1 + tanh u) = 1 / (1 + e) for u >= 0, e / (1 + e) for u < 0,
//   s (1 - s) = e / (1 + e)²,
//   gelu(x) = x s,  gelu'(x) = s + 2 x s (1 - s) u'(x).
// exp never overflows, neither 1 + tanh u nor 1 - s is formed by cancellation, and s is exactly
// 0 or 1 once e underflows. The exp is our own vectorisable one: glibc declares its vector expf
// only under -ffast-math, which we do not use. The file is compiled with -fno-trapping-math
// (engine/kernels/CMakeLists.txt): without it GCC 12 keeps the clamps and selects as branches
// and the GELU loops scalar, 50x slower than with it.
#include "engine/kernels/elementwise.h"
#include "engine/kernels/cpu/vec_math.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace accel::kernels {
using cpu::VecExp;
namespace {

// Below this many elements the loops stay on one thread: a parallel region costs a few
// microseconds, more than the loop itself.
constexpr int64_t kParallelMinElems = int64_t{1} << 15;

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;
// Beyond |x| = 10, |u| > 43 and e = exp(-2|u|) underflows to 0: s is exactly 0 or 1 and
// s (1 - s) exactly 0, so clamping x inside u changes nothing but keeps x³ finite.
constexpr float kGeluClamp = 10.0f;

inline float GeluU(float xc) { return kSqrt2OverPi * (xc + kGeluCubic * xc * xc * xc); }

}  // namespace

void GeluForward(float* out, const float* inp, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMinElems)
  for (int64_t i = 0; i < n; ++i) {
    const float x = inp[i];
    const float xc = std::min(std::max(x, -kGeluClamp), kGeluClamp);
    const float u = GeluU(xc);
    const float e = VecExp(-2.0f * std::fabs(u));
    const float inv = 1.0f / (1.0f + e);
    out[i] = x * (u >= 0.0f ? inv : e * inv);
  }
}

void GeluBackward(float* dinp, const float* inp, const float* dout, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMinElems)
  for (int64_t i = 0; i < n; ++i) {
    const float x = inp[i];
    const float xc = std::min(std::max(x, -kGeluClamp), kGeluClamp);
    const float u = GeluU(xc);
    const float e = VecExp(-2.0f * std::fabs(u));
    const float inv = 1.0f / (1.0f + e);
    const float s = u >= 0.0f ? inv : e * inv;
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * xc * xc);
    const float grad = s + 2.0f * xc * (e * inv * inv) * du;
    dinp[i] += grad * dout[i];
  }
}

void ResidualForward(float* out, const float* a, const float* b, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMinElems)
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void ResidualBackward(float* da, float* db, const float* dout, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMinElems)
  for (int64_t i = 0; i < n; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

}  // namespace accel::kernels
