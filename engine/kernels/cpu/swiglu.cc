// Fast SwiGLU: OpenMP over rows, vector loops along I. The sigmoid is formed from
// e = exp(-|x|) in (0, 1] (our vectorisable exp, vec_math.h):
//   s = 1 / (1 + e) for x >= 0, e / (1 + e) for x < 0, and 1 - s the other one,
// so exp never overflows and 1 - s is never formed by cancellation.
#include "engine/kernels/swiglu.h"

#include <cmath>
#include <cstdint>

#include "engine/kernels/cpu/vec_math.h"

namespace accel::kernels {
using cpu::VecExp;
namespace {

// Below this many elements the loops stay on one thread: a parallel region costs a few
// microseconds, more than the loop itself.
constexpr int64_t kParallelMinElems = int64_t{1} << 15;

// sigmoid(x) and 1 - sigmoid(x), both without cancellation (see above); inlined into the
// callers' `omp simd` loops.
struct Sigmoids {
  float s, one_minus_s;
};
inline Sigmoids Sigmoid(float x) {
  const float e = VecExp(-std::fabs(x));
  const float inv = 1.0f / (1.0f + e);
  return x >= 0.0f ? Sigmoids{inv, e * inv} : Sigmoids{e * inv, inv};
}

}  // namespace

void SwiGluForward(float* out, const float* gate_up, int64_t N, int64_t I) {
#pragma omp parallel for schedule(static) if (N * I >= kParallelMinElems)
  for (int64_t n = 0; n < N; ++n) {
    const float* gate = gate_up + n * 2 * I;
    const float* up = gate + I;
    float* y = out + n * I;
#pragma omp simd
    for (int64_t i = 0; i < I; ++i) {
      const float x = gate[i];
      y[i] = x * Sigmoid(x).s * up[i];
    }
  }
}

void SwiGluBackward(float* dgate_up, const float* dout, const float* gate_up, int64_t N,
                    int64_t I) {
#pragma omp parallel for schedule(static) if (N * I >= kParallelMinElems)
  for (int64_t n = 0; n < N; ++n) {
    const float* gate = gate_up + n * 2 * I;
    const float* up = gate + I;
    const float* dy = dout + n * I;
    float* dgate = dgate_up + n * 2 * I;
    float* dup = dgate + I;
#pragma omp simd
    for (int64_t i = 0; i < I; ++i) {
      const float x = gate[i];
      const Sigmoids sg = Sigmoid(x);
      dgate[i] = dy[i] * up[i] * sg.s * (1.0f + x * sg.one_minus_s);
      dup[i] = dy[i] * x * sg.s;
    }
  }
}

}  // namespace accel::kernels
