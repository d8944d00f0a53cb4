#include "engine/model/cuda/gpt2_cuda.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/tensor/cuda/device.h"
#include "engine/kernels/cross_entropy.h"
#include "engine/kernels/cuda/kernels.h"
#include "engine/model/token_check.h"

namespace accel::model {

namespace kc = ::accel::kernels::cuda;
using cuda::DeviceBuffer;

namespace {

absl::Status Zero(DeviceBuffer& b, cudaStream_t stream) {
  ACCEL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(b.data(), 0, b.bytes(), stream));
  return absl::OkStatus();
}

// The unit's device bf16 copy when the activations can use it, else null (fp32 matmuls).
const uint16_t* Bf16Params(ParamAccess& access, int unit, const Gpt2CudaActivations& a) {
  return a.bf16_matmuls() ? access.ParamsBf16(unit) : nullptr;
}

}  // namespace

absl::StatusOr<Gpt2CudaActivations> Gpt2CudaActivations::Create(
    const Gpt2Config& c, int64_t B, int64_t T, cuda::CachingAllocator* allocator,
    cudaStream_t stream, bool bf16_matmuls) {
  if (B <= 0 || T <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("batch ", B, " x ", T, " must be positive"));
  }
  if (T > c.n_positions) {
    return absl::InvalidArgumentError(absl::StrCat("sequence length ", T, " exceeds the model's ",
                                                   c.n_positions, " positions"));
  }
  const int64_t BT = B * T, C = c.n_embd, NH = c.n_head, V = c.vocab_size;
  auto alloc_bytes = [&](int64_t bytes, DeviceBuffer* out) -> absl::Status {
    ACCEL_ASSIGN_OR_RETURN(
        *out, DeviceBuffer::Create(allocator, bytes, MemoryCategory::kActivations, stream));
    return absl::OkStatus();
  };
  auto alloc = [&](int64_t floats, DeviceBuffer* out) { return alloc_bytes(floats * 4, out); };
  Gpt2CudaActivations a;
  a.B_ = B;
  a.T_ = T;
  ACCEL_RETURN_IF_ERROR(alloc(BT, &a.inputs_));  // int32 tokens: 4 bytes each
  ACCEL_RETURN_IF_ERROR(alloc(BT, &a.targets_));
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
  ACCEL_RETURN_IF_ERROR(alloc(NH * T * T, &a.att_scratch_));
  if (bf16_matmuls) {  // two bytes per bf16 element
    ACCEL_RETURN_IF_ERROR(alloc_bytes(BT * 4 * C * 2, &a.inp16_));
    ACCEL_RETURN_IF_ERROR(alloc_bytes(BT * std::max<int64_t>(4 * C, V) * 2, &a.dout16_));
  }
  a.host_losses_.resize(BT);
  return a;
}

int64_t Gpt2CudaActivations::bytes() const {
  int64_t total = 0;
  for (const DeviceBuffer* b : {&inputs_, &targets_, &encoded_, &lnf_, &lnf_mean_, &lnf_rstd_,
                                &logits_, &losses_, &dresidual_, &dln_, &dqkv_, &datty_, &dfch_,
                                &dfch_gelu_, &att_scratch_, &inp16_, &dout16_}) {
    total += b->bytes();
  }
  for (const Layer& l : layers_) {
    for (const DeviceBuffer* b : {&l.ln1, &l.ln1_mean, &l.ln1_rstd, &l.qkv, &l.att, &l.atty,
                                  &l.residual2, &l.ln2, &l.ln2_mean, &l.ln2_rstd, &l.fch,
                                  &l.fch_gelu, &l.residual3}) {
      total += b->bytes();
    }
  }
  return total;
}

absl::StatusOr<float> Gpt2Cuda::Forward(ParamAccess& access, const int32_t* inputs,
                                        const int32_t* targets, Gpt2CudaActivations& a) {
  const Gpt2Config& c = config_;
  const int64_t B = a.B(), T = a.T(), BT = B * T, C = c.n_embd, NH = c.n_head, V = c.vocab_size;
  ACCEL_RETURN_IF_ERROR(CheckTokens(inputs, BT, V, "input"));
  if (targets != nullptr) ACCEL_RETURN_IF_ERROR(CheckTargets(targets, BT, V));
  const cudaStream_t s = stream_;
  ACCEL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(a.inputs_.data(), inputs, BT * sizeof(int32_t),
                                             cudaMemcpyHostToDevice, s));
  if (targets != nullptr) {
    ACCEL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(a.targets_.data(), targets, BT * sizeof(int32_t),
                                               cudaMemcpyHostToDevice, s));
  }
  const Gpt2RootOffsets& ro = offsets_.root;
  const Gpt2BlockOffsets& bo = offsets_.block;
  cuda::Blas& blas = *blas_;

  ACCEL_ASSIGN_OR_RETURN(const float* root, access.Params(0, Pass::kForward));
  ACCEL_RETURN_IF_ERROR(kc::EmbeddingForward(a.encoded_.as<float>(), a.inputs_.as<int32_t>(),
                                             root + ro.wte, root + ro.wpe, B, T, C, s));
  const float* residual = a.encoded_.as<float>();
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const int unit = static_cast<int>(l) + 1;
    ACCEL_ASSIGN_OR_RETURN(const float* p, access.Params(unit, Pass::kForward));
    const uint16_t* p16 = Bf16Params(access, unit, a);
    Gpt2CudaActivations::Layer& L = a.layers_[l];
    ACCEL_RETURN_IF_ERROR(kc::LayerNormForward(L.ln1.as<float>(), L.ln1_mean.as<float>(),
                                               L.ln1_rstd.as<float>(), residual, p + bo.ln1_w,
                                               p + bo.ln1_b, BT, C, s));
    ACCEL_RETURN_IF_ERROR(Linear(a, L.qkv.as<float>(), L.ln1.as<float>(), p, p16, bo.qkv_w,
                                 bo.qkv_b, C, 3 * C));
    ACCEL_RETURN_IF_ERROR(kc::AttentionForward(blas, L.atty.as<float>(), L.att.as<float>(),
                                               L.qkv.as<float>(), B, T, C, NH, s));
    // residual2 = residual + atty · Wproj + bproj, computed in place in residual2.
    ACCEL_RETURN_IF_ERROR(Linear(a, L.residual2.as<float>(), L.atty.as<float>(), p, p16,
                                 bo.attproj_w, bo.attproj_b, C, C));
    ACCEL_RETURN_IF_ERROR(kc::ResidualForward(L.residual2.as<float>(), L.residual2.as<float>(),
                                              residual, BT * C, s));
    ACCEL_RETURN_IF_ERROR(kc::LayerNormForward(L.ln2.as<float>(), L.ln2_mean.as<float>(),
                                               L.ln2_rstd.as<float>(), L.residual2.as<float>(),
                                               p + bo.ln2_w, p + bo.ln2_b, BT, C, s));
    ACCEL_RETURN_IF_ERROR(
        Linear(a, L.fch.as<float>(), L.ln2.as<float>(), p, p16, bo.fc_w, bo.fc_b, C, 4 * C));
    ACCEL_RETURN_IF_ERROR(
        kc::GeluForward(L.fch_gelu.as<float>(), L.fch.as<float>(), BT * 4 * C, s));
    ACCEL_RETURN_IF_ERROR(Linear(a, L.residual3.as<float>(), L.fch_gelu.as<float>(), p, p16,
                                 bo.fcproj_w, bo.fcproj_b, 4 * C, C));
    ACCEL_RETURN_IF_ERROR(kc::ResidualForward(L.residual3.as<float>(), L.residual3.as<float>(),
                                              L.residual2.as<float>(), BT * C, s));
    ACCEL_RETURN_IF_ERROR(access.Release(unit, Pass::kForward));
    residual = L.residual3.as<float>();
  }
  ACCEL_RETURN_IF_ERROR(kc::LayerNormForward(a.lnf_.as<float>(), a.lnf_mean_.as<float>(),
                                             a.lnf_rstd_.as<float>(), residual, root + ro.lnf_w,
                                             root + ro.lnf_b, BT, C, s));
  ACCEL_RETURN_IF_ERROR(LmHead(a, root, Bf16Params(access, 0, a)));
  ACCEL_RETURN_IF_ERROR(access.Release(0, Pass::kForward));
  if (targets == nullptr) return 0.0f;
  a.loss_targets_ = kernels::CountLossTargets(targets, BT);
  ACCEL_RETURN_IF_ERROR(kc::SoftmaxCrossEntropyForward(a.losses_.as<float>(),
                                                       a.logits_.as<float>(),
                                                       a.targets_.as<int32_t>(), BT, V, s));
  ACCEL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(a.host_losses_.data(), a.losses_.data(),
                                             BT * sizeof(float), cudaMemcpyDeviceToHost, s));
  ACCEL_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
  // Masked positions add 0; the denominator is BT when nothing is masked (lm_head.cc's rule).
  if (a.loss_targets_ == 0) return 0.0f;
  double sum = 0;
  for (float x : a.host_losses_) sum += x;
  return static_cast<float>(sum / static_cast<double>(a.loss_targets_));
}

absl::Status Gpt2Cuda::Backward(ParamAccess& access, Gpt2CudaActivations& a, float dloss) {
  const Gpt2Config& c = config_;
  const int64_t B = a.B(), T = a.T(), BT = B * T, C = c.n_embd, NH = c.n_head, V = c.vocab_size;
  const Gpt2RootOffsets& ro = offsets_.root;
  const Gpt2BlockOffsets& bo = offsets_.block;
  const cudaStream_t s = stream_;
  cuda::Blas& blas = *blas_;

  ACCEL_ASSIGN_OR_RETURN(const float* root, access.Params(0, Pass::kBackward));
  ACCEL_ASSIGN_OR_RETURN(float* groot, access.Grads(0));
  float* dlogits = a.logits_.as<float>();  // in place over the logits
  const float row_dloss =
      a.loss_targets_ == 0 ? 0.0f : dloss / static_cast<float>(a.loss_targets_);
  ACCEL_RETURN_IF_ERROR(kc::SoftmaxCrossEntropyBackward(
      dlogits, a.losses_.as<float>(), dlogits, a.targets_.as<int32_t>(), BT, V, row_dloss, s));
  ACCEL_RETURN_IF_ERROR(LmHeadBackward(a, groot, root, Bf16Params(access, 0, a)));
  float* dln = a.dln_.as<float>();  // dlnf, from the lm_head
  float* dres = a.dresidual_.as<float>();
  ACCEL_RETURN_IF_ERROR(Zero(a.dresidual_, s));
  const float* last =
      c.n_layer > 0 ? a.layers_.back().residual3.as<float>() : a.encoded_.as<float>();
  ACCEL_RETURN_IF_ERROR(kc::LayerNormBackward(dres, groot + ro.lnf_w, groot + ro.lnf_b, dln, last,
                                              root + ro.lnf_w, a.lnf_mean_.as<float>(),
                                              a.lnf_rstd_.as<float>(), BT, C, s));
  for (int64_t l = c.n_layer - 1; l >= 0; --l) {
    const int unit = static_cast<int>(l) + 1;
    ACCEL_ASSIGN_OR_RETURN(const float* p, access.Params(unit, Pass::kBackward));
    ACCEL_ASSIGN_OR_RETURN(float* g, access.Grads(unit));
    const uint16_t* p16 = Bf16Params(access, unit, a);
    Gpt2CudaActivations::Layer& L = a.layers_[l];
    const float* residual =
        l > 0 ? a.layers_[l - 1].residual3.as<float>() : a.encoded_.as<float>();
    // dres holds d(residual3); it flows unchanged to residual2 and into the MLP branch.
    ACCEL_RETURN_IF_ERROR(Zero(a.dfch_gelu_, s));
    ACCEL_RETURN_IF_ERROR(LinearBackward(a, a.dfch_gelu_.as<float>(), g, dres,
                                         L.fch_gelu.as<float>(), p, p16, bo.fcproj_w,
                                         bo.fcproj_b, 4 * C, C));
    ACCEL_RETURN_IF_ERROR(Zero(a.dfch_, s));
    ACCEL_RETURN_IF_ERROR(kc::GeluBackward(a.dfch_.as<float>(), L.fch.as<float>(),
                                           a.dfch_gelu_.as<float>(), BT * 4 * C, s));
    ACCEL_RETURN_IF_ERROR(Zero(a.dln_, s));
    ACCEL_RETURN_IF_ERROR(LinearBackward(a, dln, g, a.dfch_.as<float>(), L.ln2.as<float>(), p,
                                         p16, bo.fc_w, bo.fc_b, C, 4 * C));
    ACCEL_RETURN_IF_ERROR(kc::LayerNormBackward(dres, g + bo.ln2_w, g + bo.ln2_b, dln,
                                                L.residual2.as<float>(), p + bo.ln2_w,
                                                L.ln2_mean.as<float>(), L.ln2_rstd.as<float>(),
                                                BT, C, s));
    // dres now holds d(residual2); it flows to residual and into the attention branch.
    ACCEL_RETURN_IF_ERROR(Zero(a.datty_, s));
    ACCEL_RETURN_IF_ERROR(LinearBackward(a, a.datty_.as<float>(), g, dres, L.atty.as<float>(),
                                         p, p16, bo.attproj_w, bo.attproj_b, C, C));
    ACCEL_RETURN_IF_ERROR(Zero(a.dqkv_, s));
    ACCEL_RETURN_IF_ERROR(kc::AttentionBackward(blas, a.dqkv_.as<float>(),
                                                a.att_scratch_.as<float>(), a.datty_.as<float>(),
                                                L.qkv.as<float>(), L.att.as<float>(), B, T, C, NH,
                                                s));
    ACCEL_RETURN_IF_ERROR(Zero(a.dln_, s));
    ACCEL_RETURN_IF_ERROR(LinearBackward(a, dln, g, a.dqkv_.as<float>(), L.ln1.as<float>(), p,
                                         p16, bo.qkv_w, bo.qkv_b, C, 3 * C));
    ACCEL_RETURN_IF_ERROR(kc::LayerNormBackward(dres, g + bo.ln1_w, g + bo.ln1_b, dln, residual,
                                                p + bo.ln1_w, L.ln1_mean.as<float>(),
                                                L.ln1_rstd.as<float>(), BT, C, s));
    ACCEL_RETURN_IF_ERROR(access.Release(unit, Pass::kBackward));
    ACCEL_RETURN_IF_ERROR(access.GradsReady(unit));
  }
  ACCEL_RETURN_IF_ERROR(kc::EmbeddingBackward(groot + ro.wte, groot + ro.wpe, dres,
                                              a.inputs_.as<int32_t>(), B, T, C, s));
  ACCEL_RETURN_IF_ERROR(access.Release(0, Pass::kBackward));
  return access.GradsReady(0);
}

}  // namespace accel::model
