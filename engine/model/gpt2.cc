#include "engine/model/gpt2.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/kernels/attention.h"
#include "engine/kernels/elementwise.h"
#include "engine/kernels/embedding.h"
#include "engine/kernels/layernorm.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/matmul_bf16.h"
#include "engine/model/lm_head.h"
#include "engine/model/token_check.h"
#include "engine/tensor/dtype.h"

namespace accel::model {

namespace k = ::accel::kernels;

absl::StatusOr<const float*> FlatParamAccess::Params(int unit, Pass) {
  return params_ + layout_->unit(unit).offset;
}

absl::StatusOr<float*> FlatParamAccess::Grads(int unit) {
  return grads_ + layout_->unit(unit).offset;
}

namespace {

// The parameters' bf16 copy when the activations can use it, else null (fp32 matmuls).
const uint16_t* Bf16Params(ParamAccess& access, int unit, const Gpt2Activations& a) {
  return a.bf16_matmuls() ? access.ParamsBf16(unit) : nullptr;
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> Gpt2::MatmulWeightRanges(int unit) const {
  if (unit == 0) return {};
  const int64_t C = config_.n_embd;
  const Gpt2BlockOffsets& bo = offsets_.block;
  std::vector<std::pair<int64_t, int64_t>> ranges = {
      {bo.qkv_w, C * 3 * C}, {bo.attproj_w, C * C}, {bo.fc_w, C * 4 * C}, {bo.fcproj_w, 4 * C * C}};
  std::sort(ranges.begin(), ranges.end());
  return ranges;
}

void Gpt2::Linear(Gpt2Activations& a, float* out, const float* inp, const float* p,
                  const uint16_t* p16, int64_t w_offset, int64_t b_offset, int64_t IC,
                  int64_t OC) const {
  const int64_t BT = a.B() * a.T();
  if (p16 == nullptr) {
    k::MatmulForward(out, inp, p + w_offset, p + b_offset, BT, IC, OC);
    return;
  }
  uint16_t* inp16 = a.inp16_;
  FloatToBf16(inp, inp16, BT * IC);
  k::MatmulForwardBf16(out, inp16, p16 + w_offset, p + b_offset, BT, IC, OC);
}

void Gpt2::LinearBackward(Gpt2Activations& a, float* dinp, float* g, const float* dout,
                          const float* inp, const float* p, const uint16_t* p16,
                          int64_t w_offset, int64_t b_offset, int64_t IC, int64_t OC) const {
  const int64_t BT = a.B() * a.T();
  if (p16 == nullptr) {
    k::MatmulBackward(dinp, g + w_offset, g + b_offset, dout, inp, p + w_offset, BT, IC, OC);
    return;
  }
  uint16_t* inp16 = a.inp16_;
  uint16_t* dout16 = a.dout16_;
  // The input is rounded again rather than kept from forward: keeping it would cost 2 bytes per
  // activation element of every layer, to save a pass that is small next to the two GEMMs.
  FloatToBf16(inp, inp16, BT * IC);
  FloatToBf16(dout, dout16, BT * OC);
  k::MatmulBackwardBf16(dinp, g + w_offset, g + b_offset, dout, dout16, inp16, p16 + w_offset, BT,
                        IC, OC);
}

void Gpt2::BlockForward(Gpt2Activations& a, const float* p, const uint16_t* p16,
                        const float* residual, const BlockActivations& L, bool output) const {
  const Gpt2Config& c = config_;
  const int64_t B = a.B(), T = a.T(), BT = B * T, C = c.n_embd, NH = c.n_head;
  const Gpt2BlockOffsets& bo = offsets_.block;
  k::LayerNormForward(L.ln1, L.ln1_mean, L.ln1_rstd, residual, p + bo.ln1_w, p + bo.ln1_b, BT, C);
  Linear(a, L.qkv, L.ln1, p, p16, bo.qkv_w, bo.qkv_b, C, 3 * C);
  k::AttentionForward(L.atty, L.att, L.qkv, B, T, C, NH);
  // residual2 = residual + atty · Wproj + bproj, computed in place in residual2.
  Linear(a, L.residual2, L.atty, p, p16, bo.attproj_w, bo.attproj_b, C, C);
  k::ResidualForward(L.residual2, L.residual2, residual, BT * C);
  k::LayerNormForward(L.ln2, L.ln2_mean, L.ln2_rstd, L.residual2, p + bo.ln2_w, p + bo.ln2_b, BT,
                      C);
  Linear(a, L.fch, L.ln2, p, p16, bo.fc_w, bo.fc_b, C, 4 * C);
  k::GeluForward(L.fch_gelu, L.fch, BT * 4 * C);
  if (!output) return;
  Linear(a, L.residual3, L.fch_gelu, p, p16, bo.fcproj_w, bo.fcproj_b, 4 * C, C);
  k::ResidualForward(L.residual3, L.residual3, L.residual2, BT * C);
}

absl::StatusOr<float> Gpt2::Forward(ParamAccess& access, const int32_t* inputs,
                                    const int32_t* targets, Gpt2Activations& a) const {
  const Gpt2Config& c = config_;
  const int64_t B = a.B(), T = a.T(), BT = B * T, C = c.n_embd, V = c.vocab_size;
  ACCEL_RETURN_IF_ERROR(CheckTokens(inputs, BT, V, "input"));
  if (targets != nullptr) ACCEL_RETURN_IF_ERROR(CheckTargets(targets, BT, V));
  const Gpt2RootOffsets& ro = offsets_.root;

  ACCEL_ASSIGN_OR_RETURN(const float* root, access.Params(0, Pass::kForward));
  k::EmbeddingForward(a.encoded_, inputs, root + ro.wte, root + ro.wpe, B, T, C);

  const float* residual = a.encoded_;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const int unit = static_cast<int>(l) + 1;
    ACCEL_ASSIGN_OR_RETURN(const float* p, access.Params(unit, Pass::kForward));
    const BlockActivations L = a.Block(l);
    BlockForward(a, p, Bf16Params(access, unit, a), residual, L, /*output=*/true);
    ACCEL_RETURN_IF_ERROR(access.Release(unit, Pass::kForward));
    residual = L.residual3;
  }

  k::LayerNormForward(a.lnf_, a.lnf_mean_, a.lnf_rstd_, residual, root + ro.lnf_w, root + ro.lnf_b,
                      BT, C);
  // logits (BT, V) = lnf (BT, C) · wteᵀ
  const uint16_t* root16 = Bf16Params(access, 0, a);
  LmHeadForward(a.logits_, a.lnf_, root + ro.wte, root16 == nullptr ? nullptr : root16 + ro.wte,
                a.inp16_, BT, C, V);
  ACCEL_RETURN_IF_ERROR(access.Release(0, Pass::kForward));
  if (targets == nullptr) return 0.0f;
  return LmHeadLoss(a.losses_, a.logits_, targets, BT, V);
}

absl::Status Gpt2::Backward(ParamAccess& access, const int32_t* inputs, const int32_t* targets,
                            Gpt2Activations& a, float dloss) const {
  const Gpt2Config& c = config_;
  const int64_t B = a.B(), T = a.T(), BT = B * T, C = c.n_embd, NH = c.n_head, V = c.vocab_size;
  const Gpt2RootOffsets& ro = offsets_.root;
  const Gpt2BlockOffsets& bo = offsets_.block;

  ACCEL_ASSIGN_OR_RETURN(const float* root, access.Params(0, Pass::kBackward));
  ACCEL_ASSIGN_OR_RETURN(float* groot, access.Grads(0));
  // dlnf (BT, C) = dlogits (BT, V) · wte (V, C);  dwte (V, C) += dlogitsᵀ · lnf
  float* dln = a.dln_;
  const uint16_t* root16 = Bf16Params(access, 0, a);
  LmHeadBackward(dln, groot + ro.wte, a.logits_, a.losses_, targets, a.lnf_, root + ro.wte,
                 root16 == nullptr ? nullptr : root16 + ro.wte, a.inp16_, a.dout16_, BT, C, V,
                 dloss);
  // From here on the logits are dead: under checkpoint_blocks their memory becomes the blocks'
  // working set and the scratch below.

  float* dres = a.dresidual_;
  std::memset(dres, 0, BT * C * sizeof(float));
  const float* last = c.n_layer > 0 ? a.Block(c.n_layer - 1).residual3 : a.encoded_;
  k::LayerNormBackward(dres, groot + ro.lnf_w, groot + ro.lnf_b, dln, last, root + ro.lnf_w,
                       a.lnf_mean_, a.lnf_rstd_, BT, C);

  auto zero = [](float* p, int64_t n) { std::memset(p, 0, n * sizeof(float)); };
  for (int64_t l = c.n_layer - 1; l >= 0; --l) {
    const int unit = static_cast<int>(l) + 1;
    ACCEL_ASSIGN_OR_RETURN(const float* p, access.Params(unit, Pass::kBackward));
    ACCEL_ASSIGN_OR_RETURN(float* g, access.Grads(unit));
    const uint16_t* p16 = Bf16Params(access, unit, a);
    const BlockActivations L = a.Block(l);
    const float* residual = l > 0 ? a.Block(l - 1).residual3 : a.encoded_;
    if (a.checkpoint_blocks()) BlockForward(a, p, p16, residual, L, /*output=*/false);
    // dres holds d(residual3); it flows unchanged to residual2 and into the MLP branch.
    zero(a.dfch_gelu_, BT * 4 * C);
    LinearBackward(a, a.dfch_gelu_, g, dres, L.fch_gelu, p, p16, bo.fcproj_w, bo.fcproj_b, 4 * C,
                   C);
    zero(a.dfch_, BT * 4 * C);
    k::GeluBackward(a.dfch_, L.fch, a.dfch_gelu_, BT * 4 * C);
    zero(dln, BT * C);
    LinearBackward(a, dln, g, a.dfch_, L.ln2, p, p16, bo.fc_w, bo.fc_b, C, 4 * C);
    k::LayerNormBackward(dres, g + bo.ln2_w, g + bo.ln2_b, dln, L.residual2, p + bo.ln2_w,
                         L.ln2_mean, L.ln2_rstd, BT, C);
    // dres now holds d(residual2); it flows to residual and into the attention branch.
    zero(a.datty_, BT * C);
    LinearBackward(a, a.datty_, g, dres, L.atty, p, p16, bo.attproj_w, bo.attproj_b, C, C);
    zero(a.dqkv_, BT * 3 * C);
    k::AttentionBackward(a.dqkv_, a.datty_, L.qkv, L.att, B, T, C, NH);
    zero(dln, BT * C);
    LinearBackward(a, dln, g, a.dqkv_, L.ln1, p, p16, bo.qkv_w, bo.qkv_b, C, 3 * C);
    k::LayerNormBackward(dres, g + bo.ln1_w, g + bo.ln1_b, dln, residual, p + bo.ln1_w,
                         L.ln1_mean, L.ln1_rstd, BT, C);
    ACCEL_RETURN_IF_ERROR(access.Release(unit, Pass::kBackward));
    ACCEL_RETURN_IF_ERROR(access.GradsReady(unit));
  }
  k::EmbeddingBackward(groot + ro.wte, groot + ro.wpe, dres, inputs, B, T, C);
  ACCEL_RETURN_IF_ERROR(access.Release(0, Pass::kBackward));
  return access.GradsReady(0);
}

}  // namespace accel::model
