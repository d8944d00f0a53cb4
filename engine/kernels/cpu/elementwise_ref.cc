// Plain-loop oracle for GELU (tanh form) and the residual add (see engine/kernels/elementwise.h).
// GELU is evaluated in double.
#include <cmath>
#include <cstdint>

#include "engine/kernels/elementwise.h"

namespace accel::kernels::ref {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;

}  // namespace

void GeluForward(float* out, const float* inp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = inp[i];
    const double u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
    out[i] = static_cast<float>(0.5 * x * (1.0 + std::tanh(u)));
  }
}

// d/dx [0.5 x (1 + tanh u)] = 0.5 (1 + tanh u) + 0.5 x (1 - tanh² u) u'(x),
// u'(x) = sqrt(2/pi) (1 + 3 * 0.044715 x²).
void GeluBackward(float* dinp, const float* inp, const float* dout, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = inp[i];
    const double u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
    const double th = std::tanh(u);
    const double du = kSqrt2OverPi * (1.0 + 3.0 * kGeluCubic * x * x);
    const double grad = 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * du;
    dinp[i] += static_cast<float>(grad * dout[i]);
  }
}

void ResidualForward(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void ResidualBackward(float* da, float* db, const float* dout, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

}  // namespace accel::kernels::ref
