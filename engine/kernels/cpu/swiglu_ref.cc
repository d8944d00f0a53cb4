// Plain-loop oracle for SwiGLU (see engine/kernels/swiglu.h): std::exp in double.
#include <cmath>
#include <cstdint>

#include "engine/kernels/swiglu.h"

namespace accel::kernels::ref {
namespace {

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

void SwiGluForward(float* out, const float* gate_up, int64_t N, int64_t I) {
  for (int64_t n = 0; n < N; ++n) {
    const float* gate = gate_up + n * 2 * I;
    const float* up = gate + I;
    for (int64_t i = 0; i < I; ++i) {
      const double g = gate[i];
      out[n * I + i] = static_cast<float>(g * Sigmoid(g) * up[i]);
    }
  }
}

void SwiGluBackward(float* dgate_up, const float* dout, const float* gate_up, int64_t N,
                    int64_t I) {
  for (int64_t n = 0; n < N; ++n) {
    const float* gate = gate_up + n * 2 * I;
    const float* up = gate + I;
    float* dgate = dgate_up + n * 2 * I;
    float* dup = dgate + I;
    for (int64_t i = 0; i < I; ++i) {
      const double g = gate[i], s = Sigmoid(g), dy = dout[n * I + i];
      dgate[i] = static_cast<float>(dy * up[i] * s * (1.0 + g * (1.0 - s)));
      dup[i] = static_cast<float>(dy * g * s);
    }
  }
}

}  // namespace accel::kernels::ref
