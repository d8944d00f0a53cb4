// The CUDA kernels: the CPU kernels' contracts (engine/kernels/*.h: shapes, layouts, which
// outputs accumulate with += and which overwrite) on device pointers, queued on `stream`.
//
// Differences from the CPU signatures, all forced by the device:
//   - every function returns a Status: InvalidArgument for bad sizes or dtypes, Internal (with
//     the kernel and file:line) when a launch fails. Errors of the kernels themselves surface at
//     the next synchronisation, as CUDA reports them;
//   - matmul and attention take a Blas (blas.h) for cuBLASLt / cuBLAS; attention's backward takes
//     a scratch buffer of NH·T·T floats;
//   - matmul takes dtypes (bf16 / f16 inputs, fp32 accumulation); AdamW reads fp32, bf16 or f16
//     gradients and can write a bf16 / f16 copy of the updated parameters; casts and the
//     squared norm take any DType;
//   - SquaredL2Norm writes (or adds) its double result to device memory instead of returning it.
// Reductions that the CPU path does in a fixed order (LayerNorm's dweight/dbias, embedding's
// dwte, the squared norm) use atomics here, so they are reproducible only to rounding.
// Tolerances against the CPU reference are in the tests beside this header.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "engine/kernels/adamw.h"
#include "engine/tensor/dtype.h"
#include "engine/kernels/cuda/blas.h"

namespace accel::kernels::cuda {

using ::accel::cuda::Blas;
using ::accel::cuda::GemmTypes;

// ---- embedding.cu ------------------------------------------------------------------------------
[[nodiscard]] absl::Status EmbeddingForward(float* out, const int32_t* tokens, const float* wte,
                                            const float* wpe, int64_t B, int64_t T, int64_t C,
                                            cudaStream_t stream);
[[nodiscard]] absl::Status EmbeddingBackward(float* dwte, float* dwpe, const float* dout,
                                             const int32_t* tokens, int64_t B, int64_t T,
                                             int64_t C, cudaStream_t stream);

// ---- layernorm.cu ------------------------------------------------------------------------------
[[nodiscard]] absl::Status LayerNormForward(float* out, float* mean, float* rstd, const float* inp,
                                            const float* weight, const float* bias, int64_t N,
                                            int64_t C, cudaStream_t stream);
[[nodiscard]] absl::Status LayerNormBackward(float* dinp, float* dweight, float* dbias,
                                             const float* dout, const float* inp,
                                             const float* weight, const float* mean,
                                             const float* rstd, int64_t N, int64_t C,
                                             cudaStream_t stream);

// ---- rmsnorm.cu (Llama family): out (N, C) = inp · rstd · weight, rstd (N) = 1 / sqrt(mean(inp²)
// + eps); the backward accumulates (+=) dinp (N, C) and dweight (C). eps >= 0, else
// InvalidArgument.
[[nodiscard]] absl::Status RmsNormForward(float* out, float* rstd, const float* inp,
                                          const float* weight, int64_t N, int64_t C, float eps,
                                          cudaStream_t stream);
[[nodiscard]] absl::Status RmsNormBackward(float* dinp, float* dweight, const float* dout,
                                           const float* inp, const float* weight,
                                           const float* rstd, int64_t N, int64_t C,
                                           cudaStream_t stream);

// ---- matmul.cu: the linear layer, weight (IC, OC), through Blas::Gemm ----------------------------
// out (N, OC) = inp (N, IC) · weight (IC, OC) + bias (OC). inp, weight in types.ab; out, bias in
// types.c; bias may be null.
[[nodiscard]] absl::Status MatmulForward(Blas& blas, void* out, const void* inp,
                                         const void* weight, const void* bias, int64_t N,
                                         int64_t IC, int64_t OC, GemmTypes types,
                                         cudaStream_t stream);
// Accumulates (+=) dinp (N, IC) and dweight (IC, OC) in types.c from dout, inp, weight in
// types.ab; dbias (OC, types.c) += column sums of dout. Any of the outputs may be null.
[[nodiscard]] absl::Status MatmulBackward(Blas& blas, void* dinp, void* dweight, void* dbias,
                                          const void* dout, const void* inp, const void* weight,
                                          int64_t N, int64_t IC, int64_t OC, GemmTypes types,
                                          cudaStream_t stream);

// ---- attention.cu: cuBLAS strided-batched products + causal softmax kernels ----------------------
[[nodiscard]] absl::Status AttentionForward(Blas& blas, float* out, float* att, const float* qkv,
                                            int64_t B, int64_t T, int64_t C, int64_t NH,
                                            cudaStream_t stream);
// scratch: NH·T·T floats, overwritten.
[[nodiscard]] absl::Status AttentionBackward(Blas& blas, float* dqkv, float* scratch,
                                             const float* dout, const float* qkv,
                                             const float* att, int64_t B, int64_t T, int64_t C,
                                             int64_t NH, cudaStream_t stream);

// ---- attention.cu: grouped-query causal attention (../gqa_attention.h; GPT-2's is KV = NH) ----
// InvalidArgument unless H, KV, D > 0, KV divides H and window >= 0. window: the sliding window
// (../gqa_attention.h), 0 for full causal attention; the backward reads it from att.
[[nodiscard]] absl::Status GqaAttentionForward(Blas& blas, float* out, float* att,
                                               const float* qkv, int64_t B, int64_t T, int64_t H,
                                               int64_t KV, int64_t D, cudaStream_t stream,
                                               int64_t window = 0);
// scratch: H·T·T floats, overwritten.
[[nodiscard]] absl::Status GqaAttentionBackward(Blas& blas, float* dqkv, float* scratch,
                                                const float* dout, const float* qkv,
                                                const float* att, int64_t B, int64_t T,
                                                int64_t H, int64_t KV, int64_t D,
                                                cudaStream_t stream);

// ---- rope.cu: rotary position embedding, in place on the q and k heads of packed qkv ------------
// qkv (B, T, (H + 2·KV)·D) as for GqaAttentionForward; cos, sin (T, D / 2) on the device (the host
// fills them, kernels::RopeTable). Rotate-half: per head vector x, half = D / 2,
//   x[i] ← x[i]·cos[t, i] − x[i+half]·sin[t, i];  x[i+half] ← x[i+half]·cos[t, i] + x[i]·sin[t, i].
// The backward rotates the q and k gradients in dqkv back (the transpose: angle −θ), in place.
// D must be even, else InvalidArgument.
[[nodiscard]] absl::Status RopeForward(float* qkv, const float* cos, const float* sin, int64_t B,
                                       int64_t T, int64_t H, int64_t KV, int64_t D,
                                       cudaStream_t stream);
[[nodiscard]] absl::Status RopeBackward(float* dqkv, const float* cos, const float* sin,
                                        int64_t B, int64_t T, int64_t H, int64_t KV, int64_t D,
                                        cudaStream_t stream);

// ---- swiglu.cu: the Llama MLP's gate -----------------------------------------------------------
// out (N, I) = silu(gate) · up from gate_up (N, 2I) rows [gate | up]. The backward overwrites
// (does not accumulate) dgate_up (N, 2I).
[[nodiscard]] absl::Status SwiGluForward(float* out, const float* gate_up, int64_t N, int64_t I,
                                         cudaStream_t stream);
[[nodiscard]] absl::Status SwiGluBackward(float* dgate_up, const float* dout,
                                          const float* gate_up, int64_t N, int64_t I,
                                          cudaStream_t stream);

// ---- elementwise.cu ------------------------------------------------------------------------------
[[nodiscard]] absl::Status GeluForward(float* out, const float* inp, int64_t n,
                                       cudaStream_t stream);
[[nodiscard]] absl::Status GeluBackward(float* dinp, const float* inp, const float* dout,
                                        int64_t n, cudaStream_t stream);
[[nodiscard]] absl::Status ResidualForward(float* out, const float* a, const float* b, int64_t n,
                                           cudaStream_t stream);
[[nodiscard]] absl::Status ResidualBackward(float* da, float* db, const float* dout, int64_t n,
                                            cudaStream_t stream);

// ---- cross_entropy.cu ----------------------------------------------------------------------------
[[nodiscard]] absl::Status SoftmaxCrossEntropyForward(float* losses, const float* logits,
                                                      const int32_t* targets, int64_t N,
                                                      int64_t V, cudaStream_t stream);
// dlogits may alias logits (in place).
[[nodiscard]] absl::Status SoftmaxCrossEntropyBackward(float* dlogits, float* losses,
                                                       const float* logits,
                                                       const int32_t* targets, int64_t N,
                                                       int64_t V, float dloss,
                                                       cudaStream_t stream);

// ---- adamw.cu ------------------------------------------------------------------------------------
// The CPU AdamWUpdate on fp32 master params / m / v, with grads in grad_dtype. When params_out is
// not null it also receives the updated params converted to out_dtype (bf16 or f16; round to
// nearest even, as ConvertDType): the compute copy, written in the same pass.
[[nodiscard]] absl::Status AdamWUpdate(float* params, float* m, float* v, const void* grads,
                                       DType grad_dtype, int64_t n, const AdamWHyper& hyper,
                                       void* params_out, DType out_dtype, cudaStream_t stream);
// Low precision (kernels::AdamWUpdateBf16): bf16 parameters and moments, fp32 gradients; the
// same arithmetic on the widened values, each result rounded to bf16 (nearest even).
[[nodiscard]] absl::Status AdamWUpdateBf16(uint16_t* params, uint16_t* m, uint16_t* v,
                                           const float* grads, int64_t n, const AdamWHyper& hyper,
                                           cudaStream_t stream);
// *out (one device double) = Σ x² (accumulate = false) or *out += Σ x² (accumulate = true, for a
// global norm over many tensors). Each x is widened to fp32 and its square summed in fp64.
[[nodiscard]] absl::Status SquaredL2Norm(double* out, const void* x, DType dtype, int64_t n,
                                         bool accumulate, cudaStream_t stream);

// ---- cast.cu -------------------------------------------------------------------------------------
// n elements between any two dtypes, bit for bit what accel::ConvertDType (engine/tensor/dtype.h)
// gives on the CPU, NaN payloads included. src and dst must not overlap unless equal dtypes.
[[nodiscard]] absl::Status ConvertDType(const void* src, DType src_dtype, void* dst,
                                        DType dst_dtype, int64_t n, cudaStream_t stream);
// dst[i] = round(dst[i] + src[i]) in `dtype`, added in fp32: the host sharding engine's
// accumulation of reduced gradient shards, bit for bit (one rounding per element).
[[nodiscard]] absl::Status AccumulateInDType(void* dst, const void* src, int64_t n, DType dtype,
                                             cudaStream_t stream);
// x[i] *= factor in fp32 (unscaling fp16 gradients).
[[nodiscard]] absl::Status Scale(float* x, int64_t n, float factor, cudaStream_t stream);

}  // namespace accel::kernels::cuda
