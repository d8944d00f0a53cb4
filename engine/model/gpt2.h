// GPT-2 forward and backward over the kernels (engine/kernels), one unit at a time through
// ParamAccess. Pre-LN blocks, causal attention, GELU-tanh MLP, tied lm_head, learned positions.
//
// Gpt2Activations holds what forward saves for backward at one (B, T); Gpt2 is stateless apart
// from its layout. Loss is the mean cross-entropy over B·T positions.
// Thread safety: one Gpt2Activations per concurrent caller; kernels use the OpenMP pool.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/memory_ledger.h"
#include "engine/model/param_access.h"
#include "engine/model/param_specs.h"
#include "engine/tensor/buffer.h"

namespace accel::model {

class Gpt2Activations {
 public:
  // Allocates for batch B and sequence T (charged as activations to `ledger`, in `pool`).
  // bf16_matmuls adds bf16 scratch for the matmul inputs (BT·4C and BT·max(4C, V) elements):
  // with it, the model multiplies in bf16 wherever ParamAccess::ParamsBf16 has the weights.
  [[nodiscard]] static absl::StatusOr<Gpt2Activations> Create(const Gpt2Config& config, int64_t B,
                                                              int64_t T, MemoryPool pool,
                                                              MemoryLedger* ledger = nullptr,
                                                              bool bf16_matmuls = false);
  int64_t B() const { return B_; }
  int64_t T() const { return T_; }
  int64_t bytes() const;
  bool bf16_matmuls() const { return !inp16_.empty(); }

  // Read-only views for tests and inspection.
  const float* logits() const { return logits_.as<float>(); }   // (B, T, V) after Forward
  const float* losses() const { return losses_.as<float>(); }   // (B, T)

 private:
  friend class Gpt2;
  struct Layer {
    Buffer ln1, ln1_mean, ln1_rstd, qkv, att, atty, residual2, ln2, ln2_mean, ln2_rstd, fch,
        fch_gelu, residual3;
  };
  int64_t B_ = 0, T_ = 0;
  Buffer encoded_, lnf_, lnf_mean_, lnf_rstd_, logits_, losses_;
  std::vector<Layer> layers_;
  // Backward scratch, reused across layers.
  Buffer dresidual_, dln_, dqkv_, datty_, dfch_, dfch_gelu_;
  // bf16 copies of a matmul's input and output gradient, made just before it (bf16_matmuls).
  Buffer inp16_, dout16_;
};

class Gpt2 {
 public:
  explicit Gpt2(const Gpt2Layout* layout) : layout_(layout) {}
  const Gpt2Layout& layout() const { return *layout_; }
  // The ranges of unit u (relative to the unit, sorted) that the model reads only through
  // ParamAccess::ParamsBf16 when it multiplies in bf16: the blocks' four matmul weights. The
  // root's wte also feeds the embedding lookup in fp32, so the root has none.
  std::vector<std::pair<int64_t, int64_t>> MatmulWeightRanges(int unit) const;

  // Runs the model on inputs (B, T) and, when targets (B, T) is not null, returns the mean loss
  // (otherwise 0). InvalidArgument if a token is outside [0, V), T exceeds n_positions, or
  // (B, T) differs from the activations'.
  [[nodiscard]] absl::StatusOr<float> Forward(ParamAccess& params, const int32_t* inputs,
                                              const int32_t* targets, Gpt2Activations& acts) const;
  // Backpropagates the loss of the last Forward (which must have had targets), accumulating (+=)
  // into ParamAccess::Grads. dloss scales the gradient (1 for the mean loss; 1/N for an average
  // over N micro-batches; a loss scale for fp16). Overwrites the saved logits.
  [[nodiscard]] absl::Status Backward(ParamAccess& params, const int32_t* inputs,
                                      const int32_t* targets, Gpt2Activations& acts,
                                      float dloss = 1.0f) const;

 private:
  // The linear layer inp (BT, IC) · W (IC, OC) + b on the weights at w_offset of unit params
  // p (bf16 copy p16, or null for fp32) and its backward, accumulating into unit grads g.
  void Linear(Gpt2Activations& a, float* out, const float* inp, const float* p,
              const uint16_t* p16, int64_t w_offset, int64_t b_offset, int64_t IC,
              int64_t OC) const;
  void LinearBackward(Gpt2Activations& a, float* dinp, float* g, const float* dout,
                      const float* inp, const float* p, const uint16_t* p16, int64_t w_offset,
                      int64_t b_offset, int64_t IC, int64_t OC) const;

  const Gpt2Layout* layout_;
};

}  // namespace accel::model
