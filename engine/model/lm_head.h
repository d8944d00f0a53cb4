// The language-model head every architecture ends with: logits = x · Wᵀ over the vocabulary
// (W (V, C): GPT-2's tied wte, Llama's tied embed_tokens or its own lm_head), their mean
// cross-entropy over the targets that count (!= kernels::kIgnoreIndex; docs/data.md "Loss
// mask"), and the backward of both. One implementation, so the architectures' heads
// cannot drift apart.
//
// w16 is W's bf16 copy when the model multiplies in bf16 (then x16 / dlogits16 are scratch of
// BT·C and BT·V bf16 elements), else null. The logits' buffer is reused in place for their
// gradient, as the fused softmax cross-entropy allows (kernels/cross_entropy.h).
#pragma once

#include <cstdint>

namespace accel::model {

// logits (BT, V) = x (BT, C) · Wᵀ.
void LmHeadForward(float* logits, const float* x, const float* w, const uint16_t* w16,
                   uint16_t* x16, int64_t BT, int64_t C, int64_t V);
// Writes each position's loss into losses (BT; 0 at a masked target) and returns their mean over
// the n targets that count (0 when n = 0). With no masked target: the plain mean over BT.
float LmHeadLoss(float* losses, const float* logits, const int32_t* targets, int64_t BT,
                 int64_t V);
// From the last forward's logits (overwritten by their gradient, scaled by dloss / n for the n
// targets that count; masked rows, and every row when n = 0, get zero):
// dx (BT, C) = dlogits · W (overwritten) and dw (V, C) += dlogitsᵀ · x.
void LmHeadBackward(float* dx, float* dw, float* logits, float* losses, const int32_t* targets,
                    const float* x, const float* w, const uint16_t* w16, uint16_t* x16,
                    uint16_t* dlogits16, int64_t BT, int64_t C, int64_t V, float dloss);

}  // namespace accel::model
