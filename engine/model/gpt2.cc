#include "engine/model/gpt2.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/kernels/attention.h"
#include "engine/kernels/cross_entropy.h"
#include "engine/kernels/elementwise.h"
#include "engine/kernels/embedding.h"
#include "engine/kernels/layernorm.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/matmul_bf16.h"
#include "engine/tensor/dtype.h"

namespace accel::model {

namespace k = ::accel::kernels;

absl::StatusOr<const float*> FlatParamAccess::Params(int unit, Pass) {
  return params_ + layout_->unit(unit).offset;
}

absl::StatusOr<float*> FlatParamAccess::Grads(int unit) {
  return grads_ + layout_->unit(unit).offset;
}

absl::StatusOr<Gpt2Activations> Gpt2Activations::Create(const Gpt2Config& c, int64_t B, int64_t T,
                                                        MemoryPool pool, MemoryLedger* ledger,
                                                        bool bf16_matmuls) {
  if (B <= 0 || T <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("batch ", B, " x ", T, " must be positive"));
  }
  if (T > c.n_positions) {
    return absl::InvalidArgumentError(absl::StrCat("sequence length ", T, " exceeds the model's ",
                                                   c.n_positions, " positions"));
  }
  const int64_t BT = B * T, C = c.n_embd, NH = c.n_head, V = c.vocab_size;
  auto alloc = [&](int64_t n, Buffer* out) -> absl::Status {
    ACCEL_ASSIGN_OR_RETURN(*out, AllocateFloats(n, pool, MemoryCategory::kActivations, ledger));
    return absl::OkStatus();
  };
  Gpt2Activations a;
  a.B_ = B;
  a.T_ = T;
  ACCEL_RETURN_IF_ERROR(alloc(BT * C, &a.encoded_));
  ACCEL_RETURN_IF_ERROR(alloc(BT * C, &a.lnf_));
  ACCEL_RETURN_IF_ERROR(alloc(BT, &a.lnf_mean_));
  ACCEL_RETURN_IF_ERROR(alloc(BT, &a.lnf_rstd_));
  ACCEL_RETURN_IF_ERROR(alloc(BT * V, &a.logits_));
  ACCEL_RETURN_IF_ERROR(alloc(BT, &a.losses_));
  a.layers_.resize(c.n_layer);
  for (Layer& l : a.layers_) {
    ACCEL_RETURN_IF_ERROR(alloc(BT * C, &l.ln1));
    ACCEL_RETURN_IF_ERROR(alloc(BT, &l.ln1_mean));
    ACCEL_RETURN_IF_ERROR(alloc(BT, &l.ln1_rstd));
    ACCEL_RETURN_IF_ERROR(alloc(BT * 3 * C, &l.qkv));
    ACCEL_RETURN_IF_ERROR(alloc(B * NH * T * T, &l.att));
    ACCEL_RETURN_IF_ERROR(alloc(BT * C, &l.atty));
    ACCEL_RETURN_IF_ERROR(alloc(BT * C, &l.residual2));
    ACCEL_RETURN_IF_ERROR(alloc(BT * C, &l.ln2));
    ACCEL_RETURN_IF_ERROR(alloc(BT, &l.ln2_mean));
    ACCEL_RETURN_IF_ERROR(alloc(BT, &l.ln2_rstd));
    ACCEL_RETURN_IF_ERROR(alloc(BT * 4 * C, &l.fch));
    ACCEL_RETURN_IF_ERROR(alloc(BT * 4 * C, &l.fch_gelu));
    ACCEL_RETURN_IF_ERROR(alloc(BT * C, &l.residual3));
  }
  ACCEL_RETURN_IF_ERROR(alloc(BT * C, &a.dresidual_));
  ACCEL_RETURN_IF_ERROR(alloc(BT * C, &a.dln_));
  ACCEL_RETURN_IF_ERROR(alloc(BT * 3 * C, &a.dqkv_));
  ACCEL_RETURN_IF_ERROR(alloc(BT * C, &a.datty_));
  ACCEL_RETURN_IF_ERROR(alloc(BT * 4 * C, &a.dfch_));
  ACCEL_RETURN_IF_ERROR(alloc(BT * 4 * C, &a.dfch_gelu_));
  if (bf16_matmuls) {
    // Two bf16 elements per float of the allocation.
    ACCEL_RETURN_IF_ERROR(alloc((BT * 4 * C + 1) / 2, &a.inp16_));
    ACCEL_RETURN_IF_ERROR(alloc((BT * std::max<int64_t>(4 * C, V) + 1) / 2, &a.dout16_));
  }
  return a;
}

int64_t Gpt2Activations::bytes() const {
  int64_t total = encoded_.bytes() + lnf_.bytes() + lnf_mean_.bytes() + lnf_rstd_.bytes() +
                  logits_.bytes() + losses_.bytes() + dresidual_.bytes() + dln_.bytes() +
                  dqkv_.bytes() + datty_.bytes() + dfch_.bytes() + dfch_gelu_.bytes() +
                  inp16_.bytes() + dout16_.bytes();
  for (const Layer& l : layers_) {
    for (const Buffer* b : {&l.ln1, &l.ln1_mean, &l.ln1_rstd, &l.qkv, &l.att, &l.atty,
                            &l.residual2, &l.ln2, &l.ln2_mean, &l.ln2_rstd, &l.fch, &l.fch_gelu,
                            &l.residual3}) {
      total += b->bytes();
    }
  }
  return total;
}

namespace {

absl::Status CheckTokens(const int32_t* tokens, int64_t n, int64_t V, const char* what) {
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= V) {
      return absl::InvalidArgumentError(absl::StrCat(what, " token ", tokens[i], " at position ",
                                                     i, " is outside the vocabulary [0, ", V,
                                                     ")"));
    }
  }
  return absl::OkStatus();
}

// The parameters' bf16 copy when the activations can use it, else null (fp32 matmuls).
const uint16_t* Bf16Params(ParamAccess& access, int unit, const Gpt2Activations& a) {
  return a.bf16_matmuls() ? access.ParamsBf16(unit) : nullptr;
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> Gpt2::MatmulWeightRanges(int unit) const {
  if (unit == 0) return {};
  const int64_t C = layout_->config().n_embd;
  const BlockOffsets& bo = layout_->block();
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
  uint16_t* inp16 = a.inp16_.as<uint16_t>();
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
  uint16_t* inp16 = a.inp16_.as<uint16_t>();
  uint16_t* dout16 = a.dout16_.as<uint16_t>();
  // The input is rounded again rather than kept from forward: keeping it would cost 2 bytes per
  // activation element of every layer, to save a pass that is small next to the two GEMMs.
  FloatToBf16(inp, inp16, BT * IC);
  FloatToBf16(dout, dout16, BT * OC);
  k::MatmulBackwardBf16(dinp, g + w_offset, g + b_offset, dout, dout16, inp16, p16 + w_offset, BT,
                        IC, OC);
}

absl::StatusOr<float> Gpt2::Forward(ParamAccess& access, const int32_t* inputs,
                                    const int32_t* targets, Gpt2Activations& a) const {
  const Gpt2Config& c = layout_->config();
  const int64_t B = a.B(), T = a.T(), BT = B * T, C = c.n_embd, NH = c.n_head, V = c.vocab_size;
  ACCEL_RETURN_IF_ERROR(CheckTokens(inputs, BT, V, "input"));
  if (targets != nullptr) ACCEL_RETURN_IF_ERROR(CheckTokens(targets, BT, V, "target"));
  const RootOffsets& ro = layout_->root();
  const BlockOffsets& bo = layout_->block();

  ACCEL_ASSIGN_OR_RETURN(const float* root, access.Params(0, Pass::kForward));
  k::EmbeddingForward(a.encoded_.as<float>(), inputs, root + ro.wte, root + ro.wpe, B, T, C);

  const float* residual = a.encoded_.as<float>();
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const int unit = static_cast<int>(l) + 1;
    ACCEL_ASSIGN_OR_RETURN(const float* p, access.Params(unit, Pass::kForward));
    const uint16_t* p16 = Bf16Params(access, unit, a);
    Gpt2Activations::Layer& L = a.layers_[l];
    k::LayerNormForward(L.ln1.as<float>(), L.ln1_mean.as<float>(), L.ln1_rstd.as<float>(),
                        residual, p + bo.ln1_w, p + bo.ln1_b, BT, C);
    Linear(a, L.qkv.as<float>(), L.ln1.as<float>(), p, p16, bo.qkv_w, bo.qkv_b, C, 3 * C);
    k::AttentionForward(L.atty.as<float>(), L.att.as<float>(), L.qkv.as<float>(), B, T, C, NH);
    // residual2 = residual + atty · Wproj + bproj, computed in place in residual2.
    Linear(a, L.residual2.as<float>(), L.atty.as<float>(), p, p16, bo.attproj_w, bo.attproj_b,
           C, C);
    k::ResidualForward(L.residual2.as<float>(), L.residual2.as<float>(), residual, BT * C);
    k::LayerNormForward(L.ln2.as<float>(), L.ln2_mean.as<float>(), L.ln2_rstd.as<float>(),
                        L.residual2.as<float>(), p + bo.ln2_w, p + bo.ln2_b, BT, C);
    Linear(a, L.fch.as<float>(), L.ln2.as<float>(), p, p16, bo.fc_w, bo.fc_b, C, 4 * C);
    k::GeluForward(L.fch_gelu.as<float>(), L.fch.as<float>(), BT * 4 * C);
    Linear(a, L.residual3.as<float>(), L.fch_gelu.as<float>(), p, p16, bo.fcproj_w, bo.fcproj_b,
           4 * C, C);
    k::ResidualForward(L.residual3.as<float>(), L.residual3.as<float>(), L.residual2.as<float>(),
                       BT * C);
    ACCEL_RETURN_IF_ERROR(access.Release(unit, Pass::kForward));
    residual = L.residual3.as<float>();
  }

  k::LayerNormForward(a.lnf_.as<float>(), a.lnf_mean_.as<float>(), a.lnf_rstd_.as<float>(),
                      residual, root + ro.lnf_w, root + ro.lnf_b, BT, C);
  // logits (BT, V) = lnf (BT, C) · wteᵀ
  if (const uint16_t* root16 = Bf16Params(access, 0, a); root16 != nullptr) {
    uint16_t* lnf16 = a.inp16_.as<uint16_t>();
    FloatToBf16(a.lnf_.as<float>(), lnf16, BT * C);
    k::GemmBf16(false, true, BT, V, C, lnf16, C, root16 + ro.wte, C, 0.0f, a.logits_.as<float>(),
                V);
  } else {
    k::Gemm(false, true, BT, V, C, 1.0f, a.lnf_.as<float>(), C, root + ro.wte, C, 0.0f,
            a.logits_.as<float>(), V);
  }
  ACCEL_RETURN_IF_ERROR(access.Release(0, Pass::kForward));
  if (targets == nullptr) return 0.0f;
  k::SoftmaxCrossEntropyForward(a.losses_.as<float>(), a.logits_.as<float>(), targets, BT, V);
  double sum = 0;
  for (int64_t i = 0; i < BT; ++i) sum += a.losses_.as<float>()[i];
  return static_cast<float>(sum / static_cast<double>(BT));
}

absl::Status Gpt2::Backward(ParamAccess& access, const int32_t* inputs, const int32_t* targets,
                            Gpt2Activations& a, float dloss) const {
  const Gpt2Config& c = layout_->config();
  const int64_t B = a.B(), T = a.T(), BT = B * T, C = c.n_embd, NH = c.n_head, V = c.vocab_size;
  const RootOffsets& ro = layout_->root();
  const BlockOffsets& bo = layout_->block();

  ACCEL_ASSIGN_OR_RETURN(const float* root, access.Params(0, Pass::kBackward));
  ACCEL_ASSIGN_OR_RETURN(float* groot, access.Grads(0));
  // dlogits overwrite the logits in place.
  float* dlogits = a.logits_.as<float>();
  k::SoftmaxCrossEntropyBackward(dlogits, a.losses_.as<float>(), dlogits, targets, BT, V,
                                 dloss / static_cast<float>(BT));
  // dlnf (BT, C) = dlogits (BT, V) · wte (V, C);  dwte (V, C) += dlogitsᵀ · lnf
  float* dln = a.dln_.as<float>();
  if (const uint16_t* root16 = Bf16Params(access, 0, a); root16 != nullptr) {
    uint16_t* dlogits16 = a.dout16_.as<uint16_t>();
    uint16_t* lnf16 = a.inp16_.as<uint16_t>();
    FloatToBf16(dlogits, dlogits16, BT * V);
    FloatToBf16(a.lnf_.as<float>(), lnf16, BT * C);
    k::GemmBf16(false, false, BT, C, V, dlogits16, V, root16 + ro.wte, C, 0.0f, dln, C);
    k::GemmBf16(true, false, V, C, BT, dlogits16, V, lnf16, C, 1.0f, groot + ro.wte, C);
  } else {
    k::Gemm(false, false, BT, C, V, 1.0f, dlogits, V, root + ro.wte, C, 0.0f, dln, C);
    k::Gemm(true, false, V, C, BT, 1.0f, dlogits, V, a.lnf_.as<float>(), C, 1.0f,
            groot + ro.wte, C);
  }

  float* dres = a.dresidual_.as<float>();
  std::memset(dres, 0, BT * C * sizeof(float));
  const float* last = c.n_layer > 0 ? a.layers_.back().residual3.as<float>() : a.encoded_.as<float>();
  k::LayerNormBackward(dres, groot + ro.lnf_w, groot + ro.lnf_b, dln, last, root + ro.lnf_w,
                       a.lnf_mean_.as<float>(), a.lnf_rstd_.as<float>(), BT, C);

  auto zero = [](Buffer& b) { b.Zero(); };
  for (int64_t l = c.n_layer - 1; l >= 0; --l) {
    const int unit = static_cast<int>(l) + 1;
    ACCEL_ASSIGN_OR_RETURN(const float* p, access.Params(unit, Pass::kBackward));
    ACCEL_ASSIGN_OR_RETURN(float* g, access.Grads(unit));
    const uint16_t* p16 = Bf16Params(access, unit, a);
    Gpt2Activations::Layer& L = a.layers_[l];
    const float* residual = l > 0 ? a.layers_[l - 1].residual3.as<float>() : a.encoded_.as<float>();
    // dres holds d(residual3); it flows unchanged to residual2 and into the MLP branch.
    zero(a.dfch_gelu_);
    LinearBackward(a, a.dfch_gelu_.as<float>(), g, dres, L.fch_gelu.as<float>(), p, p16,
                   bo.fcproj_w, bo.fcproj_b, 4 * C, C);
    zero(a.dfch_);
    k::GeluBackward(a.dfch_.as<float>(), L.fch.as<float>(), a.dfch_gelu_.as<float>(), BT * 4 * C);
    zero(a.dln_);
    LinearBackward(a, dln, g, a.dfch_.as<float>(), L.ln2.as<float>(), p, p16, bo.fc_w, bo.fc_b,
                   C, 4 * C);
    k::LayerNormBackward(dres, g + bo.ln2_w, g + bo.ln2_b, dln, L.residual2.as<float>(),
                         p + bo.ln2_w, L.ln2_mean.as<float>(), L.ln2_rstd.as<float>(), BT, C);
    // dres now holds d(residual2); it flows to residual and into the attention branch.
    zero(a.datty_);
    LinearBackward(a, a.datty_.as<float>(), g, dres, L.atty.as<float>(), p, p16, bo.attproj_w,
                   bo.attproj_b, C, C);
    zero(a.dqkv_);
    k::AttentionBackward(a.dqkv_.as<float>(), a.datty_.as<float>(), L.qkv.as<float>(),
                         L.att.as<float>(), B, T, C, NH);
    zero(a.dln_);
    LinearBackward(a, dln, g, a.dqkv_.as<float>(), L.ln1.as<float>(), p, p16, bo.qkv_w,
                   bo.qkv_b, C, 3 * C);
    k::LayerNormBackward(dres, g + bo.ln1_w, g + bo.ln1_b, dln, residual, p + bo.ln1_w,
                         L.ln1_mean.as<float>(), L.ln1_rstd.as<float>(), BT, C);
    ACCEL_RETURN_IF_ERROR(access.Release(unit, Pass::kBackward));
    ACCEL_RETURN_IF_ERROR(access.GradsReady(unit));
  }
  k::EmbeddingBackward(groot + ro.wte, groot + ro.wpe, dres, inputs, B, T, C);
  ACCEL_RETURN_IF_ERROR(access.Release(0, Pass::kBackward));
  return access.GradsReady(0);
}

}  // namespace accel::model
