// Gpt2Cuda: the GPT-2 of engine/model/gpt2.h on one CUDA device, through the CUDA kernels
// (engine/kernels/cuda/kernels.h), for the GPU path's golden test and, later, the device trainer.
//
// Same protocol as Gpt2: the model reaches its parameters unit by unit through ParamAccess, in
// the order param_access.h documents, but every pointer it gets (Params, ParamsBf16, Grads) is
// device memory. Everything is queued on one stream; Forward returns the mean loss, so it
// synchronises the stream once at its end (a device-to-host copy of the B·T losses). Release and
// GradsReady are called once a unit's work is queued, not finished: an engine that frees or
// reduces there must order that work after the stream (a stream-ordered allocator, an event).
// Reductions use atomics on the device (kernels.h), so results agree with the CPU model to
// rounding, not bit for bit.
//
// Precision. By default arithmetic is fp32 throughout (cuBLAS without TF32 for the matmuls).
// bf16 matmuls, as Gpt2 does them (gpt2.h): when the activations carry bf16 scratch
// (Create(..., bf16_matmuls = true)) and ParamAccess::ParamsBf16(unit) gives the unit's bf16
// copy, the linear layers of that unit (qkv, attention projection, fc, fc projection) and, for
// the root, the tied lm_head multiply in bf16: the activation input, and in backward the output
// gradient, are rounded to bf16 (round to nearest even, kernels::cuda::ConvertDType) just before
// each product and multiplied with the bf16 weights, accumulating in fp32 into fp32 outputs
// (Blas::Gemm with A/B bf16, C fp32). Biases, bias gradients (summed from the fp32 output
// gradient), weight gradients and every other op (embedding, LayerNorm, attention, GELU,
// residuals, softmax cross-entropy) stay fp32. The embedding lookup reads the fp32 wte. A unit
// whose ParamsBf16 is null multiplies in fp32, as do all units without the scratch. Against the
// fp32 path on the same (bf16-representable) weights, logits and each unit's gradients are to
// agree within 1e-2 relative L2 (gpt2_cuda_bf16_test.cc, label gpu; not yet run on a device).
//
// Gpt2CudaActivations owns the device buffers of one (B, T): what forward saves for backward,
// backward's scratch (with the bf16 scratch when asked), and the token ids (uploaded by
// Forward). Buffers come from a CachingAllocator and are charged as activations to its ledger.
// Thread safety: one Gpt2CudaActivations per concurrent caller; one stream per caller.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/kernels/cuda/blas.h"
#include "engine/tensor/cuda/caching_allocator.h"
#include "engine/model/param_access.h"
#include "engine/model/gpt2_specs.h"
#include "engine/model/param_specs.h"

namespace accel::model {

class Gpt2CudaActivations {
 public:
  // InvalidArgument for a non-positive batch or a sequence longer than n_positions;
  // ResourceExhausted when the device is full. bf16_matmuls adds bf16 scratch for the matmul
  // inputs (BT·4C and BT·max(4C, V) elements): with it, the model multiplies in bf16 wherever
  // ParamAccess::ParamsBf16 has the weights.
  [[nodiscard]] static absl::StatusOr<Gpt2CudaActivations> Create(
      const Gpt2Config& config, int64_t B, int64_t T, cuda::CachingAllocator* allocator,
      cudaStream_t stream, bool bf16_matmuls = false);
  int64_t B() const { return B_; }
  int64_t T() const { return T_; }
  int64_t bytes() const;
  bool bf16_matmuls() const { return inp16_.data() != nullptr; }
  const float* logits() const { return logits_.as<float>(); }  // device (B, T, V)

 private:
  friend class Gpt2Cuda;
  struct Layer {
    cuda::DeviceBuffer ln1, ln1_mean, ln1_rstd, qkv, att, atty, residual2, ln2, ln2_mean,
        ln2_rstd, fch, fch_gelu, residual3;
  };
  int64_t B_ = 0, T_ = 0;
  cuda::DeviceBuffer inputs_, targets_;
  cuda::DeviceBuffer encoded_, lnf_, lnf_mean_, lnf_rstd_, logits_, losses_;
  std::vector<Layer> layers_;
  cuda::DeviceBuffer dresidual_, dln_, dqkv_, datty_, dfch_, dfch_gelu_, att_scratch_;
  // bf16 copies of a matmul's input and output gradient, made just before it (bf16_matmuls).
  cuda::DeviceBuffer inp16_, dout16_;
  std::vector<float> host_losses_;
  // The last Forward's targets that count (!= kernels::kIgnoreIndex): its loss's denominator.
  int64_t loss_targets_ = 0;
};

class Gpt2Cuda {
 public:
  // Not owning; `blas` and `stream` must outlive the model.
  Gpt2Cuda(const ModelLayout* layout, cuda::Blas* blas, cudaStream_t stream)
      : layout_(layout),
        config_(*layout->config().As<Gpt2Config>()),
        offsets_(Gpt2OffsetsOf(*layout)),
        blas_(blas),
        stream_(stream) {}

  // inputs and targets are host arrays (B, T), checked as Gpt2::Forward checks them and
  // uploaded; targets may be null (then returns 0). The mean loss over the targets that count
  // (!= kernels::kIgnoreIndex; 0 when none do), as Gpt2::Forward.
  [[nodiscard]] absl::StatusOr<float> Forward(ParamAccess& params, const int32_t* inputs,
                                              const int32_t* targets, Gpt2CudaActivations& acts);
  // Backpropagates the last Forward (which had targets), accumulating (+=) into the device
  // gradients ParamAccess::Grads gives. dloss scales the gradient as in Gpt2::Backward.
  // Overwrites the saved logits. Returns once queued (no synchronisation).
  [[nodiscard]] absl::Status Backward(ParamAccess& params, Gpt2CudaActivations& acts,
                                      float dloss = 1.0f);

 private:
  // The linear layer inp (BT, IC) · W (IC, OC) + b on the weights at w_offset of unit params
  // p (device bf16 copy p16, or null for fp32) and its backward, accumulating (+=) into unit
  // grads g. Defined in gpt2_cuda_linear.cc.
  [[nodiscard]] absl::Status Linear(Gpt2CudaActivations& a, float* out, const float* inp,
                                    const float* p, const uint16_t* p16, int64_t w_offset,
                                    int64_t b_offset, int64_t IC, int64_t OC) const;
  [[nodiscard]] absl::Status LinearBackward(Gpt2CudaActivations& a, float* dinp, float* g,
                                            const float* dout, const float* inp, const float* p,
                                            const uint16_t* p16, int64_t w_offset,
                                            int64_t b_offset, int64_t IC, int64_t OC) const;
  // The tied lm_head on the root's params (bf16 copy root16, or null): logits (BT, V) =
  // lnf · wteᵀ; backward (from the dlogits in place over the logits) dlnf (BT, C) = dlogits ·
  // wte into the activations' dln, and dwte += dlogitsᵀ · lnf into groot.
  [[nodiscard]] absl::Status LmHead(Gpt2CudaActivations& a, const float* root,
                                    const uint16_t* root16) const;
  [[nodiscard]] absl::Status LmHeadBackward(Gpt2CudaActivations& a, float* groot,
                                            const float* root, const uint16_t* root16) const;

  const ModelLayout* layout_;
  const Gpt2Config& config_;
  Gpt2Offsets offsets_;
  cuda::Blas* blas_;
  cudaStream_t stream_;
};

}  // namespace accel::model
