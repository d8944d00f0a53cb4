// Causal self-attention on the device (kernels.h; contract and layout in ../attention.h), as
// cuBLAS strided-batched products over the heads of one sequence at a time plus two row kernels:
//   forward:  att = scale · q kᵀ (all T×T, the GEMM ignores causality); causal softmax in place
//             (entries above the diagonal become 0); out = att · v.
//   backward: datt = dout vᵀ; dv += attᵀ dout; ds = scale · att ⊙ (datt − Σ att·datt) (causal,
//             in place in scratch); dq += ds k; dk += dsᵀ q.
// Head h of q, k, v sits at columns h·HS (+C, +2C) of qkv rows 3C wide, so consecutive heads are
// HS elements apart: one stride serves the batch over heads. Sequences differ by T·3C, which a
// single stride cannot express together with HS, hence the loop over B.
#include <cuda_runtime.h>

#include <cmath>

#include "engine/kernels/cuda/common.cuh"
#include "engine/kernels/cuda/kernels.h"

namespace accel::kernels::cuda {
namespace {

constexpr int kRowsPerBlock = 8;  // one warp per row

// rows: `count` rows of T scores; row r holds query position r % T.
__global__ void CausalSoftmaxKernel(float* att, int64_t count, int64_t T) {
  const int lane = threadIdx.x % 32;
  const int64_t r = blockIdx.x * static_cast<int64_t>(kRowsPerBlock) + threadIdx.x / 32;
  if (r >= count) return;
  const int64_t t = r % T;
  float* row = att + r * T;
  float mx = -INFINITY;
  for (int64_t j = lane; j <= t; j += 32) mx = fmaxf(mx, row[j]);
  mx = WarpMax(mx);
  float sum = 0;
  for (int64_t j = lane; j <= t; j += 32) {
    const float e = expf(row[j] - mx);
    row[j] = e;
    sum += e;
  }
  const float inv = 1.0f / WarpSum(sum);
  for (int64_t j = lane; j < T; j += 32) row[j] = j <= t ? row[j] * inv : 0.0f;
}

// ds overwrites datt: ds = scale · att ⊙ (datt − Σ_j att_j datt_j), 0 above the diagonal.
__global__ void CausalSoftmaxBackwardKernel(float* datt, const float* att, int64_t count,
                                            int64_t T, float scale) {
  const int lane = threadIdx.x % 32;
  const int64_t r = blockIdx.x * static_cast<int64_t>(kRowsPerBlock) + threadIdx.x / 32;
  if (r >= count) return;
  const int64_t t = r % T;
  float* d = datt + r * T;
  const float* a = att + r * T;
  float dot = 0;
  for (int64_t j = lane; j <= t; j += 32) dot += a[j] * d[j];
  dot = WarpSum(dot);
  for (int64_t j = lane; j < T; j += 32) d[j] = j <= t ? scale * a[j] * (d[j] - dot) : 0.0f;
}

absl::Status CheckAttention(const char* op, int64_t B, int64_t T, int64_t C, int64_t NH) {
  if (absl::Status s = CheckSizes(op, {B, T, C, NH}); !s.ok()) return s;
  if (NH == 0 || C % NH != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": C = ", C, " is not a positive multiple of NH = ", NH));
  }
  return absl::OkStatus();
}

unsigned RowBlocks(int64_t rows) {
  return static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
}

}  // namespace

absl::Status AttentionForward(Blas& blas, float* out, float* att, const float* qkv, int64_t B,
                              int64_t T, int64_t C, int64_t NH, cudaStream_t stream) {
  ACCEL_RETURN_IF_ERROR(CheckAttention("AttentionForward", B, T, C, NH));
  if (B == 0 || T == 0 || C == 0) return absl::OkStatus();
  const int64_t HS = C / NH;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(HS)));
  for (int64_t b = 0; b < B; ++b) {
    const float* q = qkv + b * T * 3 * C;
    float* att_b = att + b * NH * T * T;
    ACCEL_RETURN_IF_ERROR(blas.GemmStridedBatched(false, true, T, T, HS, scale, q, 3 * C, HS,
                                                  q + C, 3 * C, HS, 0.0f, att_b, T, T * T, NH,
                                                  stream));
    CausalSoftmaxKernel<<<RowBlocks(NH * T), kRowsPerBlock * 32, 0, stream>>>(att_b, NH * T, T);
    ACCEL_RETURN_IF_ERROR(ACCEL_CUDA_LAUNCH_STATUS("CausalSoftmaxKernel"));
    ACCEL_RETURN_IF_ERROR(blas.GemmStridedBatched(false, false, T, HS, T, 1.0f, att_b, T, T * T,
                                                  q + 2 * C, 3 * C, HS, 0.0f, out + b * T * C, C,
                                                  HS, NH, stream));
  }
  return absl::OkStatus();
}

absl::Status AttentionBackward(Blas& blas, float* dqkv, float* scratch, const float* dout,
                               const float* qkv, const float* att, int64_t B, int64_t T,
                               int64_t C, int64_t NH, cudaStream_t stream) {
  ACCEL_RETURN_IF_ERROR(CheckAttention("AttentionBackward", B, T, C, NH));
  if (B == 0 || T == 0 || C == 0) return absl::OkStatus();
  const int64_t HS = C / NH;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(HS)));
  for (int64_t b = 0; b < B; ++b) {
    const float* q = qkv + b * T * 3 * C;
    const float* k = q + C;
    const float* v = q + 2 * C;
    float* dq = dqkv + b * T * 3 * C;
    float* dk = dq + C;
    float* dv = dq + 2 * C;
    const float* dout_b = dout + b * T * C;
    const float* att_b = att + b * NH * T * T;
    // datt (T, T) = dout_h (T, HS) · v_hᵀ
    ACCEL_RETURN_IF_ERROR(blas.GemmStridedBatched(false, true, T, T, HS, 1.0f, dout_b, C, HS, v,
                                                  3 * C, HS, 0.0f, scratch, T, T * T, NH, stream));
    // dv_h (T, HS) += att_hᵀ · dout_h
    ACCEL_RETURN_IF_ERROR(blas.GemmStridedBatched(true, false, T, HS, T, 1.0f, att_b, T, T * T,
                                                  dout_b, C, HS, 1.0f, dv, 3 * C, HS, NH, stream));
    CausalSoftmaxBackwardKernel<<<RowBlocks(NH * T), kRowsPerBlock * 32, 0, stream>>>(
        scratch, att_b, NH * T, T, scale);
    ACCEL_RETURN_IF_ERROR(ACCEL_CUDA_LAUNCH_STATUS("CausalSoftmaxBackwardKernel"));
    // dq_h += ds · k_h;  dk_h += dsᵀ · q_h
    ACCEL_RETURN_IF_ERROR(blas.GemmStridedBatched(false, false, T, HS, T, 1.0f, scratch, T, T * T,
                                                  k, 3 * C, HS, 1.0f, dq, 3 * C, HS, NH, stream));
    ACCEL_RETURN_IF_ERROR(blas.GemmStridedBatched(true, false, T, HS, T, 1.0f, scratch, T, T * T,
                                                  q, 3 * C, HS, 1.0f, dk, 3 * C, HS, NH, stream));
  }
  return absl::OkStatus();
}

}  // namespace accel::kernels::cuda
