// Plain-loop oracle for adamw.h. The per-element arithmetic is float, in the order the fast path
// uses too, so the two agree to the last bit or so; only the bias corrections are in double.
#include <cmath>
#include <cstdint>

#include <vector>

#include "engine/kernels/adamw.h"
#include "engine/tensor/dtype.h"

namespace accel::kernels::ref {

void AdamWUpdate(float* params, float* m, float* v, const float* grads, int64_t n,
                 const AdamWHyper& h) {
  const double step = static_cast<double>(h.step);
  const double bc1 = h.bias_correction ? 1.0 - std::pow(static_cast<double>(h.beta1), step) : 1.0;
  const double bc2 = h.bias_correction ? 1.0 - std::pow(static_cast<double>(h.beta2), step) : 1.0;
  const float step_size = static_cast<float>(h.lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
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

void AdamWUpdateBf16(uint16_t* params, uint16_t* m, uint16_t* v, const float* grads, int64_t n,
                     const AdamWHyper& h) {
  std::vector<float> p32(n), m32(n), v32(n);
  Bf16ToFloat(params, p32.data(), n);
  Bf16ToFloat(m, m32.data(), n);
  Bf16ToFloat(v, v32.data(), n);
  ref::AdamWUpdate(p32.data(), m32.data(), v32.data(), grads, n, h);
  FloatToBf16(p32.data(), params, n);
  FloatToBf16(m32.data(), m, n);
  FloatToBf16(v32.data(), v, n);
}

double SquaredL2Norm(const float* x, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  return sum;
}

}  // namespace accel::kernels::ref
