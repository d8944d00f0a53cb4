// SwiGLU, the gated activation of the Llama-family MLP (down(silu(gate(x)) * up(x))). The gate
// and up projections are one fused linear layer whose output row is [gate (I) | up (I)]:
//   SwiGluForward:  out[n, i] = silu(gate[n, i]) * up[n, i],  silu(x) = x * sigmoid(x)
//     gate_up (N, 2I) in, out (N, I).
//   SwiGluBackward: dgate = dout * up * silu'(gate), silu'(x) = s (1 + x (1 - s)) with
//     s = sigmoid(x); dup = dout * silu(gate). OVERWRITES dgate_up (N, 2I) (it is the fused
//     linear layer's dout, fully determined here), unlike the accumulating kernels.
// kernels::ref is the plain-loop oracle; kernels:: the fast path (same signatures).
#pragma once

#include <cstdint>

namespace accel::kernels {

#define ACCEL_SWIGLU_KERNELS                                                                  \
  void SwiGluForward(float* out, const float* gate_up, int64_t N, int64_t I);                 \
  void SwiGluBackward(float* dgate_up, const float* dout, const float* gate_up, int64_t N,     \
                      int64_t I);

ACCEL_SWIGLU_KERNELS
namespace ref {
ACCEL_SWIGLU_KERNELS
}  // namespace ref

}  // namespace accel::kernels
