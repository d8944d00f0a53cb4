// Plain-loop oracle for causal self-attention (see engine/kernels/attention.h). GPT-2's heads are
// grouped-query attention with one query head per kv head: KV = NH, D = C / NH, and the packed
// qkv layout [q | k | v] is the same. So this is the grouped-query oracle
// (cpu/gqa_attention_ref.cc: one query row at a time, sums in double), checked for GPT-2's case by
// attention_test.cc against finite differences of its own double-precision forward.
#include <cstdint>

#include "engine/kernels/attention.h"
#include "engine/kernels/gqa_attention.h"

namespace accel::kernels::ref {

void AttentionForward(float* out, float* att, const float* qkv, int64_t B, int64_t T, int64_t C,
                      int64_t NH) {
  GqaAttentionForward(out, att, qkv, B, T, NH, NH, C / NH);
}

void AttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att,
                       int64_t B, int64_t T, int64_t C, int64_t NH) {
  GqaAttentionBackward(dqkv, dout, qkv, att, B, T, NH, NH, C / NH);
}

}  // namespace accel::kernels::ref
