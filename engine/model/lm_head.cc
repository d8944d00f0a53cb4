#include "engine/model/lm_head.h"

#include "engine/kernels/cross_entropy.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/matmul_bf16.h"
#include "engine/tensor/dtype.h"

namespace accel::model {

namespace k = ::accel::kernels;

void LmHeadForward(float* logits, const float* x, const float* w, const uint16_t* w16,
                   uint16_t* x16, int64_t BT, int64_t C, int64_t V) {
  if (w16 != nullptr) {
    FloatToBf16(x, x16, BT * C);
    k::GemmBf16(false, true, BT, V, C, x16, C, w16, C, 0.0f, logits, V);
  } else {
    k::Gemm(false, true, BT, V, C, 1.0f, x, C, w, C, 0.0f, logits, V);
  }
}

float LmHeadLoss(float* losses, const float* logits, const int32_t* targets, int64_t BT,
                 int64_t V) {
  k::SoftmaxCrossEntropyForward(losses, logits, targets, BT, V);
  // Masked positions add 0; n = BT when nothing is masked (today's arithmetic, bit for bit).
  const int64_t n = k::CountLossTargets(targets, BT);
  if (n == 0) return 0.0f;
  double sum = 0;
  for (int64_t i = 0; i < BT; ++i) sum += losses[i];
  return static_cast<float>(sum / static_cast<double>(n));
}

void LmHeadBackward(float* dx, float* dw, float* logits, float* losses, const int32_t* targets,
                    const float* x, const float* w, const uint16_t* w16, uint16_t* x16,
                    uint16_t* dlogits16, int64_t BT, int64_t C, int64_t V, float dloss) {
  float* dlogits = logits;
  const int64_t n = k::CountLossTargets(targets, BT);
  const float row_dloss = n == 0 ? 0.0f : dloss / static_cast<float>(n);
  k::SoftmaxCrossEntropyBackward(dlogits, losses, dlogits, targets, BT, V, row_dloss);
  if (w16 != nullptr) {
    FloatToBf16(dlogits, dlogits16, BT * V);
    FloatToBf16(x, x16, BT * C);
    k::GemmBf16(false, false, BT, C, V, dlogits16, V, w16, C, 0.0f, dx, C);
    k::GemmBf16(true, false, V, C, BT, dlogits16, V, x16, C, 1.0f, dw, C);
  } else {
    k::Gemm(false, false, BT, C, V, 1.0f, dlogits, V, w, C, 0.0f, dx, C);
    k::Gemm(true, false, V, C, BT, 1.0f, dlogits, V, x, C, 1.0f, dw, C);
  }
}

}  // namespace accel::model
