// LayerNorm over the last dimension, eps = 1e-5, biased variance (PyTorch's nn.LayerNorm).
//   inp, out (N, C); weight, bias (C); mean, rstd (N) are saved for backward.
// Backward accumulates (+=) into dinp (N, C), dweight (C) and dbias (C).
// kernels::ref is the plain-loop oracle; kernels:: the fast path (same signatures).
#pragma once

#include <cstdint>

namespace accel::kernels {

inline constexpr float kLayerNormEps = 1e-5f;

#define ACCEL_LAYERNORM_KERNELS                                                               \
  void LayerNormForward(float* out, float* mean, float* rstd, const float* inp,               \
                        const float* weight, const float* bias, int64_t N, int64_t C);        \
  void LayerNormBackward(float* dinp, float* dweight, float* dbias, const float* dout,        \
                         const float* inp, const float* weight, const float* mean,            \
                         const float* rstd, int64_t N, int64_t C);

ACCEL_LAYERNORM_KERNELS
namespace ref {
ACCEL_LAYERNORM_KERNELS
}  // namespace ref

}  // namespace accel::kernels
