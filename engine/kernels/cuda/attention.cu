// Causal self-attention on the device (kernels.h; contracts and layouts in ../attention.h and
// ../gqa_attention.h), as cuBLAS strided-batched products plus two row kernels:
//   forward:  att = scale · q kᵀ (all T×T, the GEMM ignores causality); causal softmax in place
//             (entries above the diagonal become 0, and with a sliding window w > 0 those left of
//             t - w + 1 too); out = att · v.
//   backward: datt = dout vᵀ; dv += attᵀ dout; ds = scale · att ⊙ (datt − Σ att·datt) (causal,
//             in place in scratch); dq += ds k; dk += dsᵀ q. The backward needs no window: att
//             is exactly 0 outside it, so ds is too.
// Grouped-query layout: qkv rows W = (H + 2·KV)·D wide; query head h at column h·D, its kv head
// g = h / group (group = H / KV) at H·D + g·D (k) and (H + KV)·D + g·D (v). GPT-2 attention is the
// case KV = H. For a fixed j < group the query heads g·group + j (g = 0..KV-1) sit group·D apart
// and their kv heads D apart, so one strided-batched product per (sequence, j) serves KV heads;
// in the backward the KV heads of one batch write distinct dk, dv, and the `group` products that
// share them run one after another on the stream. Sequences differ by T·W, which a single stride
// cannot express together with the head stride, hence the loop over B.
#include <cuda_runtime.h>

#include <cmath>

#include "engine/kernels/cuda/common.cuh"
#include "engine/kernels/cuda/kernels.h"

namespace accel::kernels::cuda {
namespace {

constexpr int kRowsPerBlock = 8;  // one warp per row

// rows: `count` rows of T scores; row r holds query position r % T and attends to keys
// [first, t], first = max(0, t - window + 1) with a window (> 0), else 0.
__global__ void CausalSoftmaxKernel(float* att, int64_t count, int64_t T, int64_t window) {
  const int lane = threadIdx.x % 32;
  const int64_t r = blockIdx.x * static_cast<int64_t>(kRowsPerBlock) + threadIdx.x / 32;
  if (r >= count) return;
  const int64_t t = r % T;
  const int64_t first = window > 0 && t - window + 1 > 0 ? t - window + 1 : 0;
  float* row = att + r * T;
  float mx = -INFINITY;
  for (int64_t j = first + lane; j <= t; j += 32) mx = fmaxf(mx, row[j]);
  mx = WarpMax(mx);
  float sum = 0;
  for (int64_t j = first + lane; j <= t; j += 32) {
    const float e = expf(row[j] - mx);
    row[j] = e;
    sum += e;
  }
  const float inv = 1.0f / WarpSum(sum);
  for (int64_t j = lane; j < T; j += 32) row[j] = j >= first && j <= t ? row[j] * inv : 0.0f;
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

absl::Status CheckGqa(const char* op, int64_t B, int64_t T, int64_t H, int64_t KV, int64_t D) {
  if (absl::Status s = CheckSizes(op, {B, T, H, KV, D}); !s.ok()) return s;
  if (H == 0 || KV == 0 || D == 0 || H % KV != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": needs H, KV, D > 0 and H divisible by KV (H = ", H, ", KV = ", KV, ", D = ", D, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckAttention(const char* op, int64_t C, int64_t NH) {
  if (NH <= 0 || C < 0 || C % NH != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": C = ", C, " is not a positive multiple of NH = ", NH));
  }
  return absl::OkStatus();
}

unsigned RowBlocks(int64_t rows) {
  return static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
}

}  // namespace

absl::Status GqaAttentionForward(Blas& blas, float* out, float* att, const float* qkv, int64_t B,
                                 int64_t T, int64_t H, int64_t KV, int64_t D, cudaStream_t stream,
                                 int64_t window) {
  ACCEL_RETURN_IF_ERROR(CheckGqa("GqaAttentionForward", B, T, H, KV, D));
  if (window < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("GqaAttentionForward: window must be >= 0, got ", window));
  }
  if (B == 0 || T == 0) return absl::OkStatus();
  const int64_t W = (H + 2 * KV) * D, group = H / KV;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  for (int64_t b = 0; b < B; ++b) {
    const float* q = qkv + b * T * W;
    const float* k = q + H * D;
    const float* v = k + KV * D;
    float* att_b = att + b * H * T * T;
    for (int64_t j = 0; j < group; ++j) {
      ACCEL_RETURN_IF_ERROR(blas.GemmStridedBatched(false, true, T, T, D, scale, q + j * D, W,
                                                    group * D, k, W, D, 0.0f, att_b + j * T * T,
                                                    T, group * T * T, KV, stream));
    }
    CausalSoftmaxKernel<<<RowBlocks(H * T), kRowsPerBlock * 32, 0, stream>>>(att_b, H * T, T,
                                                                              window);
    ACCEL_RETURN_IF_ERROR(ACCEL_CUDA_LAUNCH_STATUS("CausalSoftmaxKernel"));
    for (int64_t j = 0; j < group; ++j) {
      ACCEL_RETURN_IF_ERROR(blas.GemmStridedBatched(
          false, false, T, D, T, 1.0f, att_b + j * T * T, T, group * T * T, v, W, D, 0.0f,
          out + b * T * H * D + j * D, H * D, group * D, KV, stream));
    }
  }
  return absl::OkStatus();
}

absl::Status GqaAttentionBackward(Blas& blas, float* dqkv, float* scratch, const float* dout,
                                  const float* qkv, const float* att, int64_t B, int64_t T,
                                  int64_t H, int64_t KV, int64_t D, cudaStream_t stream) {
  ACCEL_RETURN_IF_ERROR(CheckGqa("GqaAttentionBackward", B, T, H, KV, D));
  if (B == 0 || T == 0) return absl::OkStatus();
  const int64_t W = (H + 2 * KV) * D, group = H / KV;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  for (int64_t b = 0; b < B; ++b) {
    const float* q = qkv + b * T * W;
    const float* k = q + H * D;
    const float* v = k + KV * D;
    float* dq = dqkv + b * T * W;
    float* dk = dq + H * D;
    float* dv = dk + KV * D;
    const float* dout_b = dout + b * T * H * D;
    const float* att_b = att + b * H * T * T;
    for (int64_t j = 0; j < group; ++j) {
      const float* att_j = att_b + j * T * T;
      float* ds_j = scratch + j * T * T;
      // datt (T, T) = dout_h (T, D) · v_gᵀ
      ACCEL_RETURN_IF_ERROR(blas.GemmStridedBatched(false, true, T, T, D, 1.0f, dout_b + j * D,
                                                    H * D, group * D, v, W, D, 0.0f, ds_j, T,
                                                    group * T * T, KV, stream));
      // dv_g (T, D) += att_hᵀ · dout_h
      ACCEL_RETURN_IF_ERROR(blas.GemmStridedBatched(true, false, T, D, T, 1.0f, att_j, T,
                                                    group * T * T, dout_b + j * D, H * D,
                                                    group * D, 1.0f, dv, W, D, KV, stream));
    }
    CausalSoftmaxBackwardKernel<<<RowBlocks(H * T), kRowsPerBlock * 32, 0, stream>>>(
        scratch, att_b, H * T, T, scale);
    ACCEL_RETURN_IF_ERROR(ACCEL_CUDA_LAUNCH_STATUS("CausalSoftmaxBackwardKernel"));
    for (int64_t j = 0; j < group; ++j) {
      const float* ds_j = scratch + j * T * T;
      // dq_h += ds · k_g;  dk_g += dsᵀ · q_h
      ACCEL_RETURN_IF_ERROR(blas.GemmStridedBatched(false, false, T, D, T, 1.0f, ds_j, T,
                                                    group * T * T, k, W, D, 1.0f, dq + j * D, W,
                                                    group * D, KV, stream));
      ACCEL_RETURN_IF_ERROR(blas.GemmStridedBatched(true, false, T, D, T, 1.0f, ds_j, T,
                                                    group * T * T, q + j * D, W, group * D, 1.0f,
                                                    dk, W, D, KV, stream));
    }
  }
  return absl::OkStatus();
}

absl::Status AttentionForward(Blas& blas, float* out, float* att, const float* qkv, int64_t B,
                              int64_t T, int64_t C, int64_t NH, cudaStream_t stream) {
  ACCEL_RETURN_IF_ERROR(CheckAttention("AttentionForward", C, NH));
  if (C == 0) return CheckSizes("AttentionForward", {B, T});  // nothing to compute
  return GqaAttentionForward(blas, out, att, qkv, B, T, NH, NH, C / NH, stream);
}

absl::Status AttentionBackward(Blas& blas, float* dqkv, float* scratch, const float* dout,
                               const float* qkv, const float* att, int64_t B, int64_t T,
                               int64_t C, int64_t NH, cudaStream_t stream) {
  ACCEL_RETURN_IF_ERROR(CheckAttention("AttentionBackward", C, NH));
  if (C == 0) return CheckSizes("AttentionBackward", {B, T});
  return GqaAttentionBackward(blas, dqkv, scratch, dout, qkv, att, B, T, NH, NH, C / NH, stream);
}

}  // namespace accel::kernels::cuda
