// Gpt2Cuda's matmuls (gpt2_cuda.h): the linear layer and the tied lm_head, each in fp32 or, with
// a bf16 weight copy and the activations' bf16 scratch, in bf16 with fp32 accumulation, as
// Gpt2::Linear / LinearBackward and its lm_head do on the CPU (engine/model/gpt2.cc).
#include <cstdint>

#include "engine/base/status_macros.h"
#include "engine/kernels/cuda/kernels.h"
#include "engine/model/cuda/gpt2_cuda.h"

namespace accel::model {

namespace kc = ::accel::kernels::cuda;
using cuda::GemmTypes;

namespace {

constexpr GemmTypes kF32{DType::kF32, DType::kF32};
// A and B bf16; C (and a bias) fp32; fp32 accumulation.
constexpr GemmTypes kBf16{DType::kBF16, DType::kF32};

// dst (n bf16) = src (n fp32), rounded to nearest even.
absl::Status ToBf16(const float* src, uint16_t* dst, int64_t n, cudaStream_t stream) {
  return kc::ConvertDType(src, DType::kF32, dst, DType::kBF16, n, stream);
}

}  // namespace

absl::Status Gpt2Cuda::Linear(Gpt2CudaActivations& a, float* out, const float* inp,
                              const float* p, const uint16_t* p16, int64_t w_offset,
                              int64_t b_offset, int64_t IC, int64_t OC) const {
  const int64_t BT = a.B() * a.T();
  if (p16 == nullptr) {
    return kc::MatmulForward(*blas_, out, inp, p + w_offset, p + b_offset, BT, IC, OC, kF32,
                             stream_);
  }
  uint16_t* inp16 = a.inp16_.as<uint16_t>();
  ACCEL_RETURN_IF_ERROR(ToBf16(inp, inp16, BT * IC, stream_));
  // With C in fp32 the bias is fp32 too (kernels.h: bias in types.c).
  return kc::MatmulForward(*blas_, out, inp16, p16 + w_offset, p + b_offset, BT, IC, OC, kBf16,
                           stream_);
}

absl::Status Gpt2Cuda::LinearBackward(Gpt2CudaActivations& a, float* dinp, float* g,
                                      const float* dout, const float* inp, const float* p,
                                      const uint16_t* p16, int64_t w_offset, int64_t b_offset,
                                      int64_t IC, int64_t OC) const {
  const int64_t BT = a.B() * a.T();
  if (p16 == nullptr) {
    return kc::MatmulBackward(*blas_, dinp, g + w_offset, g + b_offset, dout, inp, p + w_offset,
                              BT, IC, OC, kF32, stream_);
  }
  uint16_t* inp16 = a.inp16_.as<uint16_t>();
  uint16_t* dout16 = a.dout16_.as<uint16_t>();
  // The input is rounded again rather than kept from forward, as on the CPU: keeping it would
  // cost 2 bytes per activation element of every layer, to save a pass next to two GEMMs.
  ACCEL_RETURN_IF_ERROR(ToBf16(inp, inp16, BT * IC, stream_));
  ACCEL_RETURN_IF_ERROR(ToBf16(dout, dout16, BT * OC, stream_));
  // dinp += dout16 · W16ᵀ and dW += inp16ᵀ · dout16, both fp32. MatmulBackward's column sum
  // would read dout in types.ab (bf16); the CPU sums the fp32 dout, so dbias comes from an fp32
  // call that computes nothing else.
  ACCEL_RETURN_IF_ERROR(kc::MatmulBackward(*blas_, dinp, g + w_offset, nullptr, dout16, inp16,
                                           p16 + w_offset, BT, IC, OC, kBf16, stream_));
  return kc::MatmulBackward(*blas_, nullptr, nullptr, g + b_offset, dout, nullptr, nullptr, BT,
                            IC, OC, kF32, stream_);
}

absl::Status Gpt2Cuda::LmHead(Gpt2CudaActivations& a, const float* root,
                              const uint16_t* root16) const {
  const Gpt2Config& c = config_;
  const int64_t BT = a.B() * a.T(), C = c.n_embd, V = c.vocab_size, wte = offsets_.root.wte;
  // logits (BT, V) = lnf (BT, C) · wteᵀ
  if (root16 == nullptr) {
    return blas_->Gemm(false, true, BT, V, C, 1.0f, a.lnf_.data(), C, root + wte, C, 0.0f,
                       a.logits_.data(), V, nullptr, kF32, stream_);
  }
  uint16_t* lnf16 = a.inp16_.as<uint16_t>();
  ACCEL_RETURN_IF_ERROR(ToBf16(a.lnf_.as<float>(), lnf16, BT * C, stream_));
  return blas_->Gemm(false, true, BT, V, C, 1.0f, lnf16, C, root16 + wte, C, 0.0f,
                     a.logits_.data(), V, nullptr, kBf16, stream_);
}

absl::Status Gpt2Cuda::LmHeadBackward(Gpt2CudaActivations& a, float* groot, const float* root,
                                      const uint16_t* root16) const {
  const Gpt2Config& c = config_;
  const int64_t BT = a.B() * a.T(), C = c.n_embd, V = c.vocab_size, wte = offsets_.root.wte;
  const float* dlogits = a.logits_.as<float>();  // in place over the logits
  float* dln = a.dln_.as<float>();
  // dlnf (BT, C) = dlogits (BT, V) · wte (V, C);  dwte (V, C) += dlogitsᵀ · lnf
  if (root16 == nullptr) {
    ACCEL_RETURN_IF_ERROR(blas_->Gemm(false, false, BT, C, V, 1.0f, dlogits, V, root + wte, C,
                                      0.0f, dln, C, nullptr, kF32, stream_));
    return blas_->Gemm(true, false, V, C, BT, 1.0f, dlogits, V, a.lnf_.data(), C, 1.0f,
                       groot + wte, C, nullptr, kF32, stream_);
  }
  uint16_t* dlogits16 = a.dout16_.as<uint16_t>();
  uint16_t* lnf16 = a.inp16_.as<uint16_t>();
  ACCEL_RETURN_IF_ERROR(ToBf16(dlogits, dlogits16, BT * V, stream_));
  ACCEL_RETURN_IF_ERROR(ToBf16(a.lnf_.as<float>(), lnf16, BT * C, stream_));
  ACCEL_RETURN_IF_ERROR(blas_->Gemm(false, false, BT, C, V, 1.0f, dlogits16, V, root16 + wte, C,
                                    0.0f, dln, C, nullptr, kBf16, stream_));
  return blas_->Gemm(true, false, V, C, BT, 1.0f, dlogits16, V, lnf16, C, 1.0f, groot + wte, C,
                     nullptr, kBf16, stream_);
}

}  // namespace accel::model
