#include "engine/model/llama.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/base/status_macros.h"
#include "engine/kernels/elementwise.h"
#include "engine/kernels/gqa_attention.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/matmul_bf16.h"
#include "engine/kernels/rmsnorm.h"
#include "engine/kernels/rope.h"
#include "engine/kernels/swiglu.h"
#include "engine/model/lm_head.h"
#include "engine/model/token_check.h"
#include "engine/tensor/dtype.h"

namespace accel::model {

namespace k = ::accel::kernels;

namespace {

const uint16_t* Bf16Params(ParamAccess& access, int unit, const LlamaActivations& a) {
  return a.bf16_matmuls() ? access.ParamsBf16(unit) : nullptr;
}

void Zero(float* p, int64_t n) { std::memset(p, 0, n * sizeof(float)); }

}  // namespace

Llama::Llama(const ModelLayout* layout)
    : layout_(layout),
      config_(*layout->config().As<LlamaConfig>()),
      offsets_(LlamaOffsetsOf(*layout)) {}

std::vector<std::pair<int64_t, int64_t>> Llama::MatmulWeightRanges(int unit) const {
  const LlamaConfig& c = config_;
  const int64_t C = c.hidden_size, I = c.intermediate_size;
  if (unit == 0) {
    // A tied table is also the embedding lookup's, which reads it in fp32.
    if (offsets_.root.lm_head < 0) return {};
    return {{offsets_.root.lm_head, c.vocab_size * C}};
  }
  const LlamaBlockOffsets& bo = offsets_.block;
  std::vector<std::pair<int64_t, int64_t>> ranges = {{bo.qkv_w, (c.q_dim() + 2 * c.kv_dim()) * C},
                                                     {bo.o_w, C * c.q_dim()},
                                                     {bo.gate_up_w, 2 * I * C},
                                                     {bo.down_w, C * I}};
  std::sort(ranges.begin(), ranges.end());
  return ranges;
}

void Llama::Linear(LlamaActivations& a, float* out, const float* inp, const float* p,
                   const uint16_t* p16, int64_t w_offset, int64_t b_offset, int64_t IC,
                   int64_t OC) const {
  const int64_t BT = a.B() * a.T();
  const float* bias = b_offset >= 0 ? p + b_offset : nullptr;
  if (p16 == nullptr) {
    k::LinearForward(out, inp, p + w_offset, bias, BT, IC, OC);
    return;
  }
  FloatToBf16(inp, a.inp16_, BT * IC);
  k::LinearForwardBf16(out, a.inp16_, p16 + w_offset, bias, BT, IC, OC);
}

void Llama::LinearBackward(LlamaActivations& a, float* dinp, float* g, const float* dout,
                           const float* inp, const float* p, const uint16_t* p16,
                           int64_t w_offset, int64_t b_offset, int64_t IC, int64_t OC) const {
  const int64_t BT = a.B() * a.T();
  float* dbias = b_offset >= 0 ? g + b_offset : nullptr;
  if (p16 == nullptr) {
    k::LinearBackward(dinp, g + w_offset, dbias, dout, inp, p + w_offset, BT, IC, OC);
    return;
  }
  // The input is rounded again rather than kept from forward, as Gpt2 does (gpt2.cc).
  FloatToBf16(inp, a.inp16_, BT * IC);
  FloatToBf16(dout, a.dout16_, BT * OC);
  k::LinearBackwardBf16(dinp, g + w_offset, dbias, dout, a.dout16_, a.inp16_, p16 + w_offset, BT,
                        IC, OC);
}

void Llama::QkNormForward(LlamaActivations& a, const float* p,
                          const LlamaBlockActivations& L) const {
  const LlamaConfig& c = config_;
  const int64_t H = c.num_attention_heads, KV = c.num_key_value_heads, D = c.head_dim;
  const int64_t W = c.q_dim() + 2 * c.kv_dim();
  const float eps = static_cast<float>(c.rms_norm_eps);
  const LlamaBlockOffsets& bo = offsets_.block;
  // Per position: its H query heads and KV key heads are rows of D (Hugging Face normalises the
  // (B, T, heads, head_dim) view over its last dimension).
  for (int64_t i = 0; i < a.B() * a.T(); ++i) {
    const float* in = L.qkv_pre + i * W;
    float* out = L.qkv + i * W;
    float* rstd = L.qk_rstd + i * (H + KV);
    k::RmsNormForward(out, rstd, in, p + bo.q_norm, H, D, eps);
    k::RmsNormForward(out + H * D, rstd + H, in + H * D, p + bo.k_norm, KV, D, eps);
    std::memcpy(out + (H + KV) * D, in + (H + KV) * D, KV * D * sizeof(float));
  }
}

void Llama::QkNormBackward(LlamaActivations& a, const float* p, float* g,
                           const LlamaBlockActivations& L) const {
  const LlamaConfig& c = config_;
  const int64_t H = c.num_attention_heads, KV = c.num_key_value_heads, D = c.head_dim;
  const int64_t W = c.q_dim() + 2 * c.kv_dim();
  const LlamaBlockOffsets& bo = offsets_.block;
  std::vector<float> dnormed((H + KV) * D);
  for (int64_t i = 0; i < a.B() * a.T(); ++i) {
    float* d = a.dqkv_ + i * W;
    const float* in = L.qkv_pre + i * W;
    const float* rstd = L.qk_rstd + i * (H + KV);
    std::memcpy(dnormed.data(), d, dnormed.size() * sizeof(float));
    Zero(d, (H + KV) * D);
    k::RmsNormBackward(d, g + bo.q_norm, dnormed.data(), in, p + bo.q_norm, rstd, H, D);
    k::RmsNormBackward(d + H * D, g + bo.k_norm, dnormed.data() + H * D, in + H * D,
                       p + bo.k_norm, rstd + H, KV, D);
  }
}

void Llama::BlockForward(LlamaActivations& a, int64_t l, const float* p, const uint16_t* p16,
                         const float* residual, const LlamaBlockActivations& L,
                         bool output) const {
  const LlamaConfig& c = config_;
  const int64_t B = a.B(), T = a.T(), BT = B * T, C = c.hidden_size, I = c.intermediate_size;
  const int64_t H = c.num_attention_heads, KV = c.num_key_value_heads, D = c.head_dim;
  const float eps = static_cast<float>(c.rms_norm_eps);
  const LlamaBlockOffsets& bo = offsets_.block;
  k::RmsNormForward(L.in_norm, L.in_rstd, residual, p + bo.input_norm, BT, C, eps);
  if (c.qk_norm()) {
    Linear(a, L.qkv_pre, L.in_norm, p, p16, bo.qkv_w, bo.qkv_b, C, c.q_dim() + 2 * c.kv_dim());
    QkNormForward(a, p, L);
  } else {
    Linear(a, L.qkv, L.in_norm, p, p16, bo.qkv_w, bo.qkv_b, C, c.q_dim() + 2 * c.kv_dim());
  }
  k::RopeForward(L.qkv, a.rope_cos_, a.rope_sin_, B, T, H, KV, D);
  k::GqaAttentionForward(L.atty, L.att, L.qkv, B, T, H, KV, D, c.AttentionWindow(l));
  Linear(a, L.residual2, L.atty, p, p16, bo.o_w, bo.o_b, c.q_dim(), C);
  k::ResidualForward(L.residual2, L.residual2, residual, BT * C);
  k::RmsNormForward(L.post_norm, L.post_rstd, L.residual2, p + bo.post_norm, BT, C, eps);
  Linear(a, L.gate_up, L.post_norm, p, p16, bo.gate_up_w, bo.gate_up_b, C, 2 * I);
  k::SwiGluForward(L.swiglu, L.gate_up, BT, I);
  if (!output) return;
  Linear(a, L.residual3, L.swiglu, p, p16, bo.down_w, bo.down_b, I, C);
  k::ResidualForward(L.residual3, L.residual3, L.residual2, BT * C);
}

void Llama::BlockBackward(LlamaActivations& a, const float* p, const uint16_t* p16, float* g,
                          const float* residual, const LlamaBlockActivations& L) const {
  const LlamaConfig& c = config_;
  const int64_t B = a.B(), T = a.T(), BT = B * T, C = c.hidden_size, I = c.intermediate_size;
  const int64_t H = c.num_attention_heads, KV = c.num_key_value_heads, D = c.head_dim;
  const int64_t QKV = c.q_dim() + 2 * c.kv_dim();
  const LlamaBlockOffsets& bo = offsets_.block;
  float* dres = a.dresidual_;
  float* dln = a.dln_;
  // dres holds d(residual3); it flows unchanged to residual2 and into the MLP branch.
  Zero(a.dswiglu_, BT * I);
  LinearBackward(a, a.dswiglu_, g, dres, L.swiglu, p, p16, bo.down_w, bo.down_b, I, C);
  k::SwiGluBackward(a.dgate_up_, a.dswiglu_, L.gate_up, BT, I);
  Zero(dln, BT * C);
  LinearBackward(a, dln, g, a.dgate_up_, L.post_norm, p, p16, bo.gate_up_w, bo.gate_up_b, C,
                 2 * I);
  k::RmsNormBackward(dres, g + bo.post_norm, dln, L.residual2, p + bo.post_norm, L.post_rstd, BT,
                     C);
  // dres now holds d(residual2); it flows to residual and into the attention branch.
  Zero(a.datty_, BT * c.q_dim());
  LinearBackward(a, a.datty_, g, dres, L.atty, p, p16, bo.o_w, bo.o_b, c.q_dim(), C);
  Zero(a.dqkv_, BT * QKV);
  k::GqaAttentionBackward(a.dqkv_, a.datty_, L.qkv, L.att, B, T, H, KV, D);
  k::RopeBackward(a.dqkv_, a.rope_cos_, a.rope_sin_, B, T, H, KV, D);
  if (c.qk_norm()) QkNormBackward(a, p, g, L);
  Zero(dln, BT * C);
  LinearBackward(a, dln, g, a.dqkv_, L.in_norm, p, p16, bo.qkv_w, bo.qkv_b, C, QKV);
  k::RmsNormBackward(dres, g + bo.input_norm, dln, residual, p + bo.input_norm, L.in_rstd, BT, C);
}

absl::StatusOr<float> Llama::Forward(ParamAccess& access, const int32_t* inputs,
                                     const int32_t* targets, LlamaActivations& a) const {
  const LlamaConfig& c = config_;
  const int64_t BT = a.B() * a.T(), C = c.hidden_size, V = c.vocab_size;
  ACCEL_RETURN_IF_ERROR(CheckTokens(inputs, BT, V, "input"));
  if (targets != nullptr) ACCEL_RETURN_IF_ERROR(CheckTargets(targets, BT, V));
  const LlamaRootOffsets& ro = offsets_.root;

  ACCEL_ASSIGN_OR_RETURN(const float* root, access.Params(0, Pass::kForward));
  for (int64_t i = 0; i < BT; ++i) {
    std::memcpy(a.encoded_ + i * C, root + ro.embed + inputs[i] * C, C * sizeof(float));
  }
  const float* residual = a.encoded_;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const int unit = static_cast<int>(l) + 1;
    ACCEL_ASSIGN_OR_RETURN(const float* p, access.Params(unit, Pass::kForward));
    const LlamaBlockActivations L = a.Block(l);
    BlockForward(a, l, p, Bf16Params(access, unit, a), residual, L, /*output=*/true);
    ACCEL_RETURN_IF_ERROR(access.Release(unit, Pass::kForward));
    residual = L.residual3;
  }
  k::RmsNormForward(a.norm_, a.norm_rstd_, residual, root + ro.norm, BT, C,
                    static_cast<float>(c.rms_norm_eps));
  // logits (BT, V) = norm (BT, C) · headᵀ
  const int64_t head = ro.lm_head >= 0 ? ro.lm_head : ro.embed;
  const uint16_t* root16 = Bf16Params(access, 0, a);
  LmHeadForward(a.logits_, a.norm_, root + head, root16 == nullptr ? nullptr : root16 + head,
                a.inp16_, BT, C, V);
  ACCEL_RETURN_IF_ERROR(access.Release(0, Pass::kForward));
  if (targets == nullptr) return 0.0f;
  return LmHeadLoss(a.losses_, a.logits_, targets, BT, V);
}

absl::Status Llama::Backward(ParamAccess& access, const int32_t* inputs, const int32_t* targets,
                             LlamaActivations& a, float dloss) const {
  const LlamaConfig& c = config_;
  const int64_t BT = a.B() * a.T(), C = c.hidden_size, V = c.vocab_size;
  const LlamaRootOffsets& ro = offsets_.root;
  const int64_t head = ro.lm_head >= 0 ? ro.lm_head : ro.embed;

  ACCEL_ASSIGN_OR_RETURN(const float* root, access.Params(0, Pass::kBackward));
  ACCEL_ASSIGN_OR_RETURN(float* groot, access.Grads(0));
  // dnorm (BT, C) = dlogits (BT, V) · head (V, C);  dhead (V, C) += dlogitsᵀ · norm
  float* dln = a.dln_;
  const uint16_t* root16 = Bf16Params(access, 0, a);
  LmHeadBackward(dln, groot + head, a.logits_, a.losses_, targets, a.norm_, root + head,
                 root16 == nullptr ? nullptr : root16 + head, a.inp16_, a.dout16_, BT, C, V,
                 dloss);
  // From here on the logits are dead: under checkpoint_blocks their memory becomes the layers'
  // working set and the scratch.
  float* dres = a.dresidual_;
  Zero(dres, BT * C);
  const int64_t layers = c.num_hidden_layers;
  const float* last = layers > 0 ? a.Block(layers - 1).residual3 : a.encoded_;
  k::RmsNormBackward(dres, groot + ro.norm, dln, last, root + ro.norm, a.norm_rstd_, BT, C);

  for (int64_t l = layers - 1; l >= 0; --l) {
    const int unit = static_cast<int>(l) + 1;
    ACCEL_ASSIGN_OR_RETURN(const float* p, access.Params(unit, Pass::kBackward));
    ACCEL_ASSIGN_OR_RETURN(float* g, access.Grads(unit));
    const uint16_t* p16 = Bf16Params(access, unit, a);
    const LlamaBlockActivations L = a.Block(l);
    const float* residual = l > 0 ? a.Block(l - 1).residual3 : a.encoded_;
    if (a.checkpoint_blocks()) BlockForward(a, l, p, p16, residual, L, /*output=*/false);
    BlockBackward(a, p, p16, g, residual, L);
    ACCEL_RETURN_IF_ERROR(access.Release(unit, Pass::kBackward));
    ACCEL_RETURN_IF_ERROR(access.GradsReady(unit));
  }
  // The embedding lookup's gradient, in position order (deterministic for repeated tokens).
  float* dembed = groot + ro.embed;
  for (int64_t i = 0; i < BT; ++i) {
    float* row = dembed + inputs[i] * C;
    const float* d = dres + i * C;
    for (int64_t j = 0; j < C; ++j) row[j] += d[j];
  }
  ACCEL_RETURN_IF_ERROR(access.Release(0, Pass::kBackward));
  return access.GradsReady(0);
}

}  // namespace accel::model
