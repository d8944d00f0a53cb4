// Gpt2Cuda: the GPT-2 of engine/model/gpt2.h on one CUDA device, through the CUDA kernels
// (engine/kernels/cuda/kernels.h), for the GPU path's golden test and, later, the device trainer.
//
// Same protocol as Gpt2: the model reaches its parameters unit by unit through ParamAccess, in
// the order param_access.h documents, but every pointer it gets (Params, Grads) is device
// memory. Arithmetic is fp32 throughout (cuBLAS without TF32 for the matmuls). Everything is
// queued on one stream; Forward returns the mean loss, so it synchronises the stream once at its
// end (a device-to-host copy of the B·T losses). Release and GradsReady are called once a
// unit's work is queued, not finished: an engine that frees or reduces there must order that
// work after the stream (a stream-ordered allocator, an event). Reductions use atomics on the
// device (kernels.h), so results agree with the CPU model to rounding, not bit for bit.
//
// Gpt2CudaActivations owns the device buffers of one (B, T): what forward saves for backward,
// backward's scratch, and the token ids (uploaded by Forward). Buffers come from a
// CachingAllocator and are charged as activations to its ledger.
// Thread safety: one Gpt2CudaActivations per concurrent caller; one stream per caller.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/kernels/cuda/blas.h"
#include "engine/kernels/cuda/caching_allocator.h"
#include "engine/model/param_access.h"
#include "engine/model/param_specs.h"

namespace accel::model {

class Gpt2CudaActivations {
 public:
  // InvalidArgument for a non-positive batch or a sequence longer than n_positions;
  // ResourceExhausted when the device is full.
  [[nodiscard]] static absl::StatusOr<Gpt2CudaActivations> Create(
      const Gpt2Config& config, int64_t B, int64_t T, cuda::CachingAllocator* allocator,
      cudaStream_t stream);
  int64_t B() const { return B_; }
  int64_t T() const { return T_; }
  int64_t bytes() const;
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
  std::vector<float> host_losses_;
};

class Gpt2Cuda {
 public:
  // Not owning; `blas` and `stream` must outlive the model.
  Gpt2Cuda(const Gpt2Layout* layout, cuda::Blas* blas, cudaStream_t stream)
      : layout_(layout), blas_(blas), stream_(stream) {}

  // inputs and targets are host arrays (B, T), checked as Gpt2::Forward checks them and
  // uploaded; targets may be null (then returns 0). The mean loss over B·T positions.
  [[nodiscard]] absl::StatusOr<float> Forward(ParamAccess& params, const int32_t* inputs,
                                              const int32_t* targets, Gpt2CudaActivations& acts);
  // Backpropagates the last Forward (which had targets), accumulating (+=) into the device
  // gradients ParamAccess::Grads gives. dloss scales the gradient as in Gpt2::Backward.
  // Overwrites the saved logits. Returns once queued (no synchronisation).
  [[nodiscard]] absl::Status Backward(ParamAccess& params, Gpt2CudaActivations& acts,
                                      float dloss = 1.0f);

 private:
  const Gpt2Layout* layout_;
  cuda::Blas* blas_;
  cudaStream_t stream_;
};

}  // namespace accel::model
