// AdamW update on a flat range, PyTorch's torch.optim.AdamW arithmetic (decoupled decay):
//   g  = grad * grad_scale                   (grad_scale carries clipping / loss-scale undo)
//   p *= 1 - lr * weight_decay
//   m  = beta1 m + (1 - beta1) g
//   v  = beta2 v + (1 - beta2) g²
//   p -= lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
// step is 1-based. With bias_correction false (DeepSpeed's Adam `bias_correction: false`) both
// corrections are 1: p -= lr * m / (sqrt(v) + eps). params, m, v (n) are updated in place; grads is read only.
// AdamWUpdateBf16 is the low-precision form (bf16 params and moments, no fp32 master: FSDP
// with bf16 weights and no mixed precision): the same fp32 arithmetic on the widened values,
// each result rounded to bf16 (nearest even) when stored.
// SquaredL2Norm returns Σ x² accumulated in double (for global-norm clipping).
// kernels::ref is the plain-loop oracle; kernels:: the fast path (same signatures).
#pragma once

#include <cstdint>

namespace accel::kernels {

struct AdamWHyper {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  int64_t step = 1;
  float grad_scale = 1.0f;
  bool bias_correction = true;  // false: divide by neither 1 - beta1^step nor sqrt(1 - beta2^step)
};

#define ACCEL_ADAMW_KERNELS                                                          \
  void AdamWUpdate(float* params, float* m, float* v, const float* grads, int64_t n, \
                   const AdamWHyper& hyper);                                         \
  void AdamWUpdateBf16(uint16_t* params, uint16_t* m, uint16_t* v, const float* grads,    \
                       int64_t n, const AdamWHyper& hyper);                               \
  double SquaredL2Norm(const float* x, int64_t n);

ACCEL_ADAMW_KERNELS
namespace ref {
ACCEL_ADAMW_KERNELS
}  // namespace ref

}  // namespace accel::kernels
