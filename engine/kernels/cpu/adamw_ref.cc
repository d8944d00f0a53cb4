// Plain-loop oracle for adamw.h. The per-element arithmetic is float, in the order the fast path
// uses too, so the two agree to the last bit or so; only the bias corrections are in double.
#include <cmath>
#include <cstdint>

#include "engine/kernels/adamw.h"

namespace accel::kernels::ref {

void AdamWUpdate(float* params, float* m, float* v, const float* grads, int64_t n,
                 const AdamWHyper& h) {
  const double step = static_cast<double>(h.step);
  const float step_size =
      static_cast<float>(h.lr / (1.0 - std::pow(static_cast<double>(h.beta1), step)));
  const float bc2_sqrt =
      static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(h.beta2), step)));
  const float decay = 1.0f - h.lr * h.weight_decay;
  const float one_minus_beta1 = 1.0f - h.beta1;
  const float one_minus_beta2 = 1.0f - h.beta2;
  for (int64_t i = 0; i < n; ++i) {
    const float g = grads[i] * h.grad_scale;
    float p = params[i];
    if (h.weight_decay != 0.0f) p *= decay;
    const float mi = h.beta1 * m[i] + one_minus_beta1 * g;
    const float vi = h.beta2 * v[i] + one_minus_beta2 * (g * g);
    const float denom = std::sqrt(vi) / bc2_sqrt + h.eps;
    p -= step_size * (mi / denom);
    params[i] = p;
    m[i] = mi;
    v[i] = vi;
  }
}

double SquaredL2Norm(const float* x, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  return sum;
}

}  // namespace accel::kernels::ref
