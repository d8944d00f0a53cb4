// RMSNorm over the last dimension (Hugging Face's LlamaRMSNorm, used by Llama, Mistral, Qwen2):
//   rstd[n] = 1 / sqrt(mean_c(inp[n, c]²) + eps),  out[n, c] = (inp[n, c] * rstd[n]) * weight[c].
// No mean subtraction and no bias. inp, out (N, C); weight (C); rstd (N) is saved for backward.
// eps is the model's rms_norm_eps (1e-5 or 1e-6 in the Llama family), so it is an argument.
// The mean of squares is accumulated in double: one row's C fp32 squares summed in fp32 would
// lose ~log2(C) bits before the division.
// Backward accumulates (+=) into dinp (N, C) and dweight (C).
// kernels::ref is the plain-loop oracle; kernels:: the fast path (same signatures).
#pragma once

#include <cstdint>

namespace accel::kernels {

#define ACCEL_RMSNORM_KERNELS                                                                 \
  void RmsNormForward(float* out, float* rstd, const float* inp, const float* weight,         \
                      int64_t N, int64_t C, float eps);                                       \
  void RmsNormBackward(float* dinp, float* dweight, const float* dout, const float* inp,      \
                       const float* weight, const float* rstd, int64_t N, int64_t C);

ACCEL_RMSNORM_KERNELS
namespace ref {
ACCEL_RMSNORM_KERNELS
}  // namespace ref

}  // namespace accel::kernels
