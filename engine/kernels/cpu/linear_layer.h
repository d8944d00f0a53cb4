// The linear layer over a GEMM, for both weight orientations and both operand types: shared by
// the fp32 (matmul.cc) and bf16 (matmul_bf16.cc) fast paths, which pass their GEMM as
//   gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc)   (C = op(A) · op(B) + beta C).
// WeightLayout::kInOut is Hugging Face's Conv1D (weight (IC, OC), out = inp · weight + bias);
// kOutIn is nn.Linear (weight (OC, IC), out = inp · weightᵀ + bias). Each product is one GEMM
// whatever the orientation: a transposed operand is a flag, not a copy.
#pragma once

#include <cstdint>

#include "engine/kernels/cpu/matmul_bias.h"

namespace accel::kernels::internal {

enum class WeightLayout { kInOut, kOutIn };

// out (N, OC) = inp (N, IC) · op(weight) + bias (OC); bias may be null.
template <typename T, typename GemmFn>
void LinearLayerForward(const GemmFn& gemm, WeightLayout layout, float* out, const T* inp,
                        const T* weight, const float* bias, int64_t N, int64_t IC, int64_t OC) {
  if (N == 0 || OC == 0) return;
  const bool out_in = layout == WeightLayout::kOutIn;
  gemm(false, out_in, N, OC, IC, inp, IC, weight, out_in ? IC : OC, 0.0f, out, OC);
  if (bias != nullptr) AddBiasRows(out, bias, N, OC);
}

// Accumulates (+=) dinp (N, IC), dweight (the weight's layout) and dbias (OC); any may be null.
// The GEMMs read dout_t (dout as T); the bias gradient reads dout (fp32).
template <typename T, typename GemmFn>
void LinearLayerBackward(const GemmFn& gemm, WeightLayout layout, float* dinp, float* dweight,
                         float* dbias, const float* dout, const T* dout_t, const T* inp,
                         const T* weight, int64_t N, int64_t IC, int64_t OC) {
  const bool out_in = layout == WeightLayout::kOutIn;
  if (dinp != nullptr) {
    // (N, IC) += (N, OC) · (OC, IC): the (OC, IC) weight as stored, or (IC, OC) transposed.
    gemm(false, !out_in, N, IC, OC, dout_t, OC, weight, out_in ? IC : OC, 1.0f, dinp, IC);
  }
  if (dweight != nullptr) {
    if (out_in) {
      // (OC, IC) += (N, OC)ᵀ · (N, IC)
      gemm(true, false, OC, IC, N, dout_t, OC, inp, IC, 1.0f, dweight, IC);
    } else {
      // (IC, OC) += (N, IC)ᵀ · (N, OC)
      gemm(true, false, IC, OC, N, inp, IC, dout_t, OC, 1.0f, dweight, OC);
    }
  }
  if (dbias != nullptr) AccumulateBiasGrad(dbias, dout, N, OC);
}

}  // namespace accel::kernels::internal
