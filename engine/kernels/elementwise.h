// Element-wise ops: GELU (tanh approximation, GPT-2's "gelu_new") and the residual add.
//   GeluForward: out[i] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
//   GeluBackward: dinp[i] += gelu'(inp[i]) * dout[i]
//   ResidualForward: out[i] = a[i] + b[i]   (out may alias a or b)
//   ResidualBackward: da[i] += dout[i]; db[i] += dout[i]
// kernels::ref is the plain-loop oracle; kernels:: the fast path (same signatures).
#pragma once

#include <cstdint>

namespace accel::kernels {

#define ACCEL_ELEMENTWISE_KERNELS                                                        \
  void GeluForward(float* out, const float* inp, int64_t n);                             \
  void GeluBackward(float* dinp, const float* inp, const float* dout, int64_t n);        \
  void ResidualForward(float* out, const float* a, const float* b, int64_t n);           \
  void ResidualBackward(float* da, float* db, const float* dout, int64_t n);

ACCEL_ELEMENTWISE_KERNELS
namespace ref {
ACCEL_ELEMENTWISE_KERNELS
}  // namespace ref

}  // namespace accel::kernels
