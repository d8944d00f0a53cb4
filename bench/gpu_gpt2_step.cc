#include "bench/gpu_gpt2_step.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <vector>

#include "bench/gpu_bench_util.h"
#include "engine/base/status_macros.h"
#include "engine/tensor/cuda/device.h"
#include "engine/kernels/cuda/kernels.h"

namespace accel::bench {
namespace {

namespace kc = ::accel::kernels::cuda;
using ::accel::cuda::GemmTypes;
using ::accel::kernels::AdamWHyper;

constexpr int64_t kL = 12, kC = 768, kNH = 12, kV = 50304, kB = 16, kT = 1024, kN = kB * kT;
constexpr double kCountedParams = 124439808;  // GPT-2 124M, unpadded vocabulary
constexpr double kPeakFlops = 989e12;          // H200 dense bf16

// Offsets (in elements) of one layer's parameters inside the flat buffer.
struct LayerParams {
  int64_t ln1w, ln1b, qkvw, qkvb, projw, projb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb;
};
struct Layout {
  int64_t wte, wpe, lnfw, lnfb, total = 0;
  LayerParams layer[kL];
  std::vector<int64_t> ln_weights;  // set to 1

  Layout() {
    auto take = [&](int64_t n) {
      const int64_t at = total;
      total += n;
      return at;
    };
    wte = take(kV * kC);
    wpe = take(kT * kC);
    for (LayerParams& p : layer) {
      p.ln1w = take(kC), p.ln1b = take(kC), p.qkvw = take(kC * 3 * kC), p.qkvb = take(3 * kC);
      p.projw = take(kC * kC), p.projb = take(kC), p.ln2w = take(kC), p.ln2b = take(kC);
      p.fcw = take(kC * 4 * kC), p.fcb = take(4 * kC), p.fcprojw = take(4 * kC * kC);
      p.fcprojb = take(kC);
      ln_weights.push_back(p.ln1w);
      ln_weights.push_back(p.ln2w);
    }
    lnfw = take(kC), lnfb = take(kC);
    ln_weights.push_back(lnfw);
  }
};

// One layer's saved activations.
struct LayerActs {
  float *mean1, *rstd1, *qkv, *att, *atty, *res2, *mean2, *rstd2, *fch, *res3;
  uint16_t *ln1_bf, *atty_bf, *ln2_bf, *gelu_bf;
};

class Step {
 public:
  Step(cudaStream_t stream, GpuArena& arena) : s_(stream), arena_(arena) {}

  absl::Status Init() {
    ACCEL_ASSIGN_OR_RETURN(blas_, kc::Blas::Create());
    ACCEL_ASSIGN_OR_RETURN(p_, F(arena_.Random(lay_.total, DType::kF32)));
    const std::vector<float> ones(kC, 1.0f);
    for (int64_t at : lay_.ln_weights) {
      ACCEL_CUDA_RETURN_IF_ERROR(
          cudaMemcpy(p_ + at, ones.data(), kC * 4, cudaMemcpyHostToDevice));
    }
    ACCEL_ASSIGN_OR_RETURN(pb_, H(arena_.Zeros(lay_.total, DType::kBF16)));
    ACCEL_RETURN_IF_ERROR(kc::ConvertDType(p_, DType::kF32, pb_, DType::kBF16, lay_.total, s_));
    ACCEL_ASSIGN_OR_RETURN(g_, F(arena_.Zeros(lay_.total, DType::kF32)));
    ACCEL_ASSIGN_OR_RETURN(m_, F(arena_.Zeros(lay_.total, DType::kF32)));
    ACCEL_ASSIGN_OR_RETURN(v_, F(arena_.Zeros(lay_.total, DType::kF32)));
    ACCEL_ASSIGN_OR_RETURN(tokens_, arena_.Tokens(kN, 50257));
    ACCEL_ASSIGN_OR_RETURN(targets_, arena_.Tokens(kN + 1, 50257));
    targets_ += 1;  // a different sequence from the tokens
    for (LayerActs& a : acts_) {
      ACCEL_ASSIGN_OR_RETURN(a.mean1, F(arena_.Zeros(kN, DType::kF32)));
      ACCEL_ASSIGN_OR_RETURN(a.rstd1, F(arena_.Zeros(kN, DType::kF32)));
      ACCEL_ASSIGN_OR_RETURN(a.qkv, F(arena_.Zeros(kN * 3 * kC, DType::kF32)));
      ACCEL_ASSIGN_OR_RETURN(a.att, F(arena_.Zeros(kB * kNH * kT * kT, DType::kF32)));
      ACCEL_ASSIGN_OR_RETURN(a.atty, F(arena_.Zeros(kN * kC, DType::kF32)));
      ACCEL_ASSIGN_OR_RETURN(a.res2, F(arena_.Zeros(kN * kC, DType::kF32)));
      ACCEL_ASSIGN_OR_RETURN(a.mean2, F(arena_.Zeros(kN, DType::kF32)));
      ACCEL_ASSIGN_OR_RETURN(a.rstd2, F(arena_.Zeros(kN, DType::kF32)));
      ACCEL_ASSIGN_OR_RETURN(a.fch, F(arena_.Zeros(kN * 4 * kC, DType::kF32)));
      ACCEL_ASSIGN_OR_RETURN(a.res3, F(arena_.Zeros(kN * kC, DType::kF32)));
      ACCEL_ASSIGN_OR_RETURN(a.ln1_bf, H(arena_.Zeros(kN * kC, DType::kBF16)));
      ACCEL_ASSIGN_OR_RETURN(a.atty_bf, H(arena_.Zeros(kN * kC, DType::kBF16)));
      ACCEL_ASSIGN_OR_RETURN(a.ln2_bf, H(arena_.Zeros(kN * kC, DType::kBF16)));
      ACCEL_ASSIGN_OR_RETURN(a.gelu_bf, H(arena_.Zeros(kN * 4 * kC, DType::kBF16)));
    }
    ACCEL_ASSIGN_OR_RETURN(encoded_, F(arena_.Zeros(kN * kC, DType::kF32)));
    ACCEL_ASSIGN_OR_RETURN(tmp_, F(arena_.Zeros(kN * 4 * kC, DType::kF32)));
    ACCEL_ASSIGN_OR_RETURN(tmp2_, F(arena_.Zeros(kN * 4 * kC, DType::kF32)));
    ACCEL_ASSIGN_OR_RETURN(tmp_bf_, H(arena_.Zeros(kN * 4 * kC, DType::kBF16)));
    ACCEL_ASSIGN_OR_RETURN(dres_, F(arena_.Zeros(kN * kC, DType::kF32)));
    ACCEL_ASSIGN_OR_RETURN(meanf_, F(arena_.Zeros(kN, DType::kF32)));
    ACCEL_ASSIGN_OR_RETURN(rstdf_, F(arena_.Zeros(kN, DType::kF32)));
    ACCEL_ASSIGN_OR_RETURN(lnf_bf_, H(arena_.Zeros(kN * kC, DType::kBF16)));
    ACCEL_ASSIGN_OR_RETURN(logits_, F(arena_.Zeros(kN * kV, DType::kF32)));
    ACCEL_ASSIGN_OR_RETURN(dlogits_bf_, H(arena_.Zeros(kN * kV, DType::kBF16)));
    ACCEL_ASSIGN_OR_RETURN(losses_, F(arena_.Zeros(kN, DType::kF32)));
    ACCEL_ASSIGN_OR_RETURN(scratch_, F(arena_.Zeros(kNH * kT * kT, DType::kF32)));
    ACCEL_ASSIGN_OR_RETURN(norm_, F(arena_.Zeros(2, DType::kF32)));
    return absl::OkStatus();
  }

  absl::Status Run(int64_t step) {
    ACCEL_RETURN_IF_ERROR(Forward());
    ACCEL_RETURN_IF_ERROR(Backward());
    ACCEL_RETURN_IF_ERROR(kc::SquaredL2Norm(reinterpret_cast<double*>(norm_), g_, DType::kF32,
                                            lay_.total, false, s_));
    AdamWHyper h;
    h.lr = 1e-4f;
    h.weight_decay = 0.1f;
    h.step = step;
    ACCEL_RETURN_IF_ERROR(
        kc::AdamWUpdate(p_, m_, v_, g_, DType::kF32, lay_.total, h, pb_, DType::kBF16, s_));
    ACCEL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(g_, 0, lay_.total * 4, s_));
    return absl::OkStatus();
  }

  absl::StatusOr<double> MeanLoss() {
    std::vector<float> host(kN);
    ACCEL_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s_));
    ACCEL_CUDA_RETURN_IF_ERROR(cudaMemcpy(host.data(), losses_, kN * 4, cudaMemcpyDeviceToHost));
    return std::accumulate(host.begin(), host.end(), 0.0) / kN;
  }

 private:
  static absl::StatusOr<float*> F(absl::StatusOr<void*> p) {
    if (!p.ok()) return p.status();
    return static_cast<float*>(*p);
  }
  static absl::StatusOr<uint16_t*> H(absl::StatusOr<void*> p) {
    if (!p.ok()) return p.status();
    return static_cast<uint16_t*>(*p);
  }
  absl::Status ToBf16(const float* src, uint16_t* dst, int64_t n) {
    return kc::ConvertDType(src, DType::kF32, dst, DType::kBF16, n, s_);
  }
  absl::Status Linear(float* out, const uint16_t* inp, int64_t w, int64_t b, int64_t ic,
                      int64_t oc) {
    return kc::MatmulForward(*blas_, out, inp, pb_ + w, p_ + b, kN, ic, oc,
                             GemmTypes{DType::kBF16, DType::kF32}, s_);
  }
  // dinp (zeroed here) and the weight / bias gradients; dout is cast to bf16 into tmp_bf_.
  absl::Status LinearBack(float* dinp, const float* dout, const uint16_t* inp, int64_t w,
                          int64_t b, int64_t ic, int64_t oc) {
    ACCEL_RETURN_IF_ERROR(ToBf16(dout, tmp_bf_, kN * oc));
    ACCEL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dinp, 0, kN * ic * 4, s_));
    return kc::MatmulBackward(*blas_, dinp, g_ + w, g_ + b, tmp_bf_, inp, pb_ + w, kN, ic, oc,
                              GemmTypes{DType::kBF16, DType::kF32}, s_);
  }

  absl::Status Forward() {
    ACCEL_RETURN_IF_ERROR(
        kc::EmbeddingForward(encoded_, tokens_, p_ + lay_.wte, p_ + lay_.wpe, kB, kT, kC, s_));
    const float* x = encoded_;
    for (int l = 0; l < kL; ++l) {
      const LayerParams& w = lay_.layer[l];
      LayerActs& a = acts_[l];
      ACCEL_RETURN_IF_ERROR(kc::LayerNormForward(tmp_, a.mean1, a.rstd1, x, p_ + w.ln1w,
                                                 p_ + w.ln1b, kN, kC, s_));
      ACCEL_RETURN_IF_ERROR(ToBf16(tmp_, a.ln1_bf, kN * kC));
      ACCEL_RETURN_IF_ERROR(Linear(a.qkv, a.ln1_bf, w.qkvw, w.qkvb, kC, 3 * kC));
      ACCEL_RETURN_IF_ERROR(kc::AttentionForward(*blas_, a.atty, a.att, a.qkv, kB, kT, kC, kNH, s_));
      ACCEL_RETURN_IF_ERROR(ToBf16(a.atty, a.atty_bf, kN * kC));
      ACCEL_RETURN_IF_ERROR(Linear(tmp_, a.atty_bf, w.projw, w.projb, kC, kC));
      ACCEL_RETURN_IF_ERROR(kc::ResidualForward(a.res2, x, tmp_, kN * kC, s_));
      ACCEL_RETURN_IF_ERROR(kc::LayerNormForward(tmp_, a.mean2, a.rstd2, a.res2, p_ + w.ln2w,
                                                 p_ + w.ln2b, kN, kC, s_));
      ACCEL_RETURN_IF_ERROR(ToBf16(tmp_, a.ln2_bf, kN * kC));
      ACCEL_RETURN_IF_ERROR(Linear(a.fch, a.ln2_bf, w.fcw, w.fcb, kC, 4 * kC));
      ACCEL_RETURN_IF_ERROR(kc::GeluForward(tmp_, a.fch, kN * 4 * kC, s_));
      ACCEL_RETURN_IF_ERROR(ToBf16(tmp_, a.gelu_bf, kN * 4 * kC));
      ACCEL_RETURN_IF_ERROR(Linear(tmp_, a.gelu_bf, w.fcprojw, w.fcprojb, 4 * kC, kC));
      ACCEL_RETURN_IF_ERROR(kc::ResidualForward(a.res3, a.res2, tmp_, kN * kC, s_));
      x = a.res3;
    }
    ACCEL_RETURN_IF_ERROR(kc::LayerNormForward(tmp_, meanf_, rstdf_, x, p_ + lay_.lnfw,
                                               p_ + lay_.lnfb, kN, kC, s_));
    ACCEL_RETURN_IF_ERROR(ToBf16(tmp_, lnf_bf_, kN * kC));
    // logits (N, V) = lnf · wteᵀ (tied weights, wte stored (V, C)).
    ACCEL_RETURN_IF_ERROR(blas_->Gemm(false, true, kN, kV, kC, 1.0f, lnf_bf_, kC, pb_ + lay_.wte,
                                      kC, 0.0f, logits_, kV, nullptr,
                                      GemmTypes{DType::kBF16, DType::kF32}, s_));
    // Loss and dlogits in place (mean over the N positions).
    return kc::SoftmaxCrossEntropyBackward(logits_, losses_, logits_, targets_, kN, kV,
                                           1.0f / kN, s_);
  }

  absl::Status Backward() {
    const GemmTypes bf{DType::kBF16, DType::kF32};
    ACCEL_RETURN_IF_ERROR(ToBf16(logits_, dlogits_bf_, kN * kV));
    // dlnf (N, C) = dlogits · wte;  dwte (V, C) += dlogitsᵀ · lnf.
    ACCEL_RETURN_IF_ERROR(blas_->Gemm(false, false, kN, kC, kV, 1.0f, dlogits_bf_, kV,
                                      pb_ + lay_.wte, kC, 0.0f, tmp2_, kC, nullptr, bf, s_));
    ACCEL_RETURN_IF_ERROR(blas_->Gemm(true, false, kV, kC, kN, 1.0f, dlogits_bf_, kV, lnf_bf_, kC,
                                      1.0f, g_ + lay_.wte, kC, nullptr, bf, s_));
    ACCEL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dres_, 0, kN * kC * 4, s_));
    ACCEL_RETURN_IF_ERROR(kc::LayerNormBackward(dres_, g_ + lay_.lnfw, g_ + lay_.lnfb, tmp2_,
                                                acts_[kL - 1].res3, p_ + lay_.lnfw, meanf_,
                                                rstdf_, kN, kC, s_));
    // dres_ is the gradient of the residual stream; a residual add passes it to both inputs.
    for (int l = kL - 1; l >= 0; --l) {
      const LayerParams& w = lay_.layer[l];
      LayerActs& a = acts_[l];
      const float* x = l == 0 ? encoded_ : acts_[l - 1].res3;
      ACCEL_RETURN_IF_ERROR(LinearBack(tmp2_, dres_, a.gelu_bf, w.fcprojw, w.fcprojb, 4 * kC, kC));
      ACCEL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(tmp_, 0, kN * 4 * kC * 4, s_));
      ACCEL_RETURN_IF_ERROR(kc::GeluBackward(tmp_, a.fch, tmp2_, kN * 4 * kC, s_));
      ACCEL_RETURN_IF_ERROR(LinearBack(tmp2_, tmp_, a.ln2_bf, w.fcw, w.fcb, kC, 4 * kC));
      ACCEL_RETURN_IF_ERROR(kc::LayerNormBackward(dres_, g_ + w.ln2w, g_ + w.ln2b, tmp2_, a.res2,
                                                  p_ + w.ln2w, a.mean2, a.rstd2, kN, kC, s_));
      ACCEL_RETURN_IF_ERROR(LinearBack(tmp2_, dres_, a.atty_bf, w.projw, w.projb, kC, kC));
      ACCEL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(tmp_, 0, kN * 3 * kC * 4, s_));
      ACCEL_RETURN_IF_ERROR(kc::AttentionBackward(*blas_, tmp_, scratch_, tmp2_, a.qkv, a.att, kB,
                                                  kT, kC, kNH, s_));
      ACCEL_RETURN_IF_ERROR(LinearBack(tmp2_, tmp_, a.ln1_bf, w.qkvw, w.qkvb, kC, 3 * kC));
      ACCEL_RETURN_IF_ERROR(kc::LayerNormBackward(dres_, g_ + w.ln1w, g_ + w.ln1b, tmp2_, x,
                                                  p_ + w.ln1w, a.mean1, a.rstd1, kN, kC, s_));
    }
    return kc::EmbeddingBackward(g_ + lay_.wte, g_ + lay_.wpe, dres_, tokens_, kB, kT, kC, s_);
  }

  cudaStream_t s_;
  GpuArena& arena_;
  Layout lay_;
  std::unique_ptr<kc::Blas> blas_;
  float *p_ = nullptr, *g_ = nullptr, *m_ = nullptr, *v_ = nullptr;
  uint16_t* pb_ = nullptr;
  int32_t *tokens_ = nullptr, *targets_ = nullptr;
  LayerActs acts_[kL];
  float *encoded_, *tmp_, *tmp2_, *dres_, *meanf_, *rstdf_, *logits_, *losses_, *scratch_, *norm_;
  uint16_t *tmp_bf_, *lnf_bf_, *dlogits_bf_;
};

}  // namespace

absl::Status RunGpt2Step(cudaStream_t stream, int steps) {
  GpuArena arena(stream);
  auto step = std::make_unique<Step>(stream, arena);
  ACCEL_RETURN_IF_ERROR(step->Init());
  std::printf("parameters (padded vocab %lld): counted as %.0f; device memory held: %.1f GiB\n",
              static_cast<long long>(kV), kCountedParams,
              arena.allocator().stats().reserved_bytes / 1073741824.0);
  ACCEL_RETURN_IF_ERROR(step->Run(1));
  ACCEL_ASSIGN_OR_RETURN(double first_loss, step->MeanLoss());
  ACCEL_RETURN_IF_ERROR(step->Run(2));  // warm-up
  int64_t next = 3;
  ACCEL_ASSIGN_OR_RETURN(double ms, TimeMs(stream, 0, steps, [&] { return step->Run(next++); }));
  ACCEL_ASSIGN_OR_RETURN(double last_loss, step->MeanLoss());
  const double tokens_per_s = kN / (ms * 1e-3);
  const double flops_per_token = 6.0 * kCountedParams + 6.0 * kL * kC * kT;
  const double mfu = tokens_per_s * flops_per_token / kPeakFlops;
  std::printf("mean loss: step 1 %.4f, step %lld %.4f (random data; ln %lld = %.4f)\n",
              first_loss, static_cast<long long>(next - 1), last_loss, static_cast<long long>(kV),
              std::log(static_cast<double>(kV)));
  std::printf("step: %.2f ms (mean of %d)  tokens/s: %.0f  FLOPs/token: %.4g  MFU: %.1f%% of "
              "989 TFLOP/s\n",
              ms, steps, tokens_per_s, flops_per_token, 100.0 * mfu);
  if (!std::isfinite(first_loss) || !std::isfinite(last_loss)) {
    return absl::InternalError("the loss is not finite");
  }
  return absl::OkStatus();
}

}  // namespace accel::bench
