// Plain-loop oracle for matmul.h: double accumulation, no blocking, no threads.
#include "engine/kernels/matmul.h"

#include <cstdint>
#include <vector>

namespace accel::kernels::ref {

void Gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k) {
        double a = trans_a ? A[k * lda + i] : A[i * lda + k];
        double b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
        acc += a * b;
      }
      float* c = &C[i * ldc + j];
      // beta == 0 must not read C: it may hold NaN.
      double prior = beta == 0.0f ? 0.0 : static_cast<double>(beta) * *c;
      *c = static_cast<float>(static_cast<double>(alpha) * acc + prior);
    }
  }
}

namespace {

// The linear layer's loops for either weight orientation: weight element (i, o), input channel
// i and output channel o, is at weight[i * w_in + o * w_out]: (IC, OC) storage is w_in = OC,
// w_out = 1 (Conv1D); (OC, IC) storage is w_in = 1, w_out = IC (nn.Linear).
void LayerForward(float* out, const float* inp, const float* weight, const float* bias,
                  int64_t N, int64_t IC, int64_t OC, int64_t w_in, int64_t w_out) {
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t o = 0; o < OC; ++o) {
      double acc = bias != nullptr ? bias[o] : 0.0;
      for (int64_t i = 0; i < IC; ++i) {
        acc += static_cast<double>(inp[n * IC + i]) * weight[i * w_in + o * w_out];
      }
      out[n * OC + o] = static_cast<float>(acc);
    }
  }
}

void LayerBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                   const float* inp, const float* weight, int64_t N, int64_t IC, int64_t OC,
                   int64_t w_in, int64_t w_out) {
  if (dinp != nullptr) {
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t i = 0; i < IC; ++i) {
        double acc = 0.0;
        for (int64_t o = 0; o < OC; ++o) {
          acc += static_cast<double>(dout[n * OC + o]) * weight[i * w_in + o * w_out];
        }
        dinp[n * IC + i] = static_cast<float>(dinp[n * IC + i] + acc);
      }
    }
  }
  if (dweight != nullptr) {
    for (int64_t i = 0; i < IC; ++i) {
      for (int64_t o = 0; o < OC; ++o) {
        double acc = 0.0;
        for (int64_t n = 0; n < N; ++n) {
          acc += static_cast<double>(inp[n * IC + i]) * dout[n * OC + o];
        }
        float& w = dweight[i * w_in + o * w_out];
        w = static_cast<float>(w + acc);
      }
    }
  }
  if (dbias != nullptr) {
    for (int64_t o = 0; o < OC; ++o) {
      double acc = 0.0;
      for (int64_t n = 0; n < N; ++n) acc += dout[n * OC + o];
      dbias[o] = static_cast<float>(dbias[o] + acc);
    }
  }
}

}  // namespace

void MatmulForward(float* out, const float* inp, const float* weight, const float* bias,
                   int64_t N, int64_t IC, int64_t OC) {
  LayerForward(out, inp, weight, bias, N, IC, OC, /*w_in=*/OC, /*w_out=*/1);
}

void MatmulBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                    const float* inp, const float* weight, int64_t N, int64_t IC, int64_t OC) {
  LayerBackward(dinp, dweight, dbias, dout, inp, weight, N, IC, OC, /*w_in=*/OC, /*w_out=*/1);
}

void LinearForward(float* out, const float* inp, const float* weight, const float* bias,
                   int64_t N, int64_t IC, int64_t OC) {
  LayerForward(out, inp, weight, bias, N, IC, OC, /*w_in=*/1, /*w_out=*/IC);
}

void LinearBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                    const float* inp, const float* weight, int64_t N, int64_t IC, int64_t OC) {
  LayerBackward(dinp, dweight, dbias, dout, inp, weight, N, IC, OC, /*w_in=*/1, /*w_out=*/IC);
}

}  // namespace accel::kernels::ref
