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
#include "engine/model/activation_options.h"
#include "engine/model/gpt2_specs.h"
#include "engine/model/param_specs.h"
#include "engine/tensor/buffer.h"

namespace accel::model {

// What one transformer block's forward writes, as pointers into Gpt2Activations' storage.
struct BlockActivations {
  float *ln1, *ln1_mean, *ln1_rstd, *qkv, *att, *atty, *residual2, *ln2, *ln2_mean, *ln2_rstd,
      *fch, *fch_gelu, *residual3;
};

class Gpt2Activations {
 public:
  // Allocates for batch B and sequence T (charged as activations to `ledger`, in `pool`).
  [[nodiscard]] static absl::StatusOr<Gpt2Activations> Create(const Gpt2Config& config, int64_t B,
                                                              int64_t T, MemoryPool pool,
                                                              MemoryLedger* ledger = nullptr,
                                                              ActivationOptions options = {});
  // The bytes Create allocates for the same arguments (bytes() of the result), without
  // allocating: for memory plans. InvalidArgument as Create for a bad B or T.
  [[nodiscard]] static absl::StatusOr<int64_t> PlannedBytes(const Gpt2Config& config, int64_t B,
                                                            int64_t T, ActivationOptions options);
  int64_t B() const { return B_; }
  int64_t T() const { return T_; }
  int64_t bytes() const;
  bool bf16_matmuls() const { return options_.bf16_matmuls; }
  bool checkpoint_blocks() const { return options_.checkpoint_blocks; }

  // Read-only views for tests and inspection.
  const float* logits() const { return logits_; }  // (B, T, V) after Forward
  const float* losses() const { return losses_; }  // (B, T)

 private:
  friend class Gpt2;
  friend struct ActivationLayout;  // gpt2_activations.cc
  // Block l's activations: its own, or (checkpoint_blocks) the shared working set with l's own
  // output.
  BlockActivations Block(int64_t l) const;

  int64_t B_ = 0, T_ = 0;
  ActivationOptions options_;
  std::vector<Buffer> storage_;  // every allocation; the pointers below point into them
  float *encoded_ = nullptr, *lnf_ = nullptr, *lnf_mean_ = nullptr, *lnf_rstd_ = nullptr,
        *logits_ = nullptr, *losses_ = nullptr;
  std::vector<BlockActivations> blocks_;  // checkpoint_blocks: only residual3 is set
  BlockActivations working_{};            // checkpoint_blocks: one block's working set
  // Backward scratch, reused across layers.
  float *dresidual_ = nullptr, *dln_ = nullptr, *dqkv_ = nullptr, *datty_ = nullptr,
        *dfch_ = nullptr, *dfch_gelu_ = nullptr;
  // bf16 copies of a matmul's input and output gradient, made just before it (bf16_matmuls).
  uint16_t *inp16_ = nullptr, *dout16_ = nullptr;
};

class Gpt2 {
 public:
  // layout: a GPT-2 config's (layout->config().As<Gpt2Config>() not null), outliving the model.
  explicit Gpt2(const ModelLayout* layout)
      : layout_(layout),
        config_(*layout->config().As<Gpt2Config>()),
        offsets_(Gpt2OffsetsOf(*layout)) {}
  const ModelLayout& layout() const { return *layout_; }
  // The ranges of unit u (relative to the unit, sorted) that the model reads only through
  // ParamAccess::ParamsBf16 when it multiplies in bf16: the blocks' four matmul weights. The
  // root's wte also feeds the embedding lookup in fp32, so the root has none.
  std::vector<std::pair<int64_t, int64_t>> MatmulWeightRanges(int unit) const;

  // Runs the model on inputs (B, T) and, when targets (B, T) is not null, returns the mean loss
  // over the targets that count (!= kernels::kIgnoreIndex; 0 when none do; otherwise 0).
  // InvalidArgument if a token is outside [0, V) (a target may also be kIgnoreIndex), T exceeds n_positions, or
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
  // Block l's forward from its input `residual` into `L`; without `output` it stops before the
  // MLP's projection (a recompute: backward does not read the block's output).
  void BlockForward(Gpt2Activations& a, const float* p, const uint16_t* p16, const float* residual,
                    const BlockActivations& L, bool output) const;
  // The linear layer inp (BT, IC) · W (IC, OC) + b on the weights at w_offset of unit params
  // p (bf16 copy p16, or null for fp32) and its backward, accumulating into unit grads g.
  void Linear(Gpt2Activations& a, float* out, const float* inp, const float* p,
              const uint16_t* p16, int64_t w_offset, int64_t b_offset, int64_t IC,
              int64_t OC) const;
  void LinearBackward(Gpt2Activations& a, float* dinp, float* g, const float* dout,
                      const float* inp, const float* p, const uint16_t* p16, int64_t w_offset,
                      int64_t b_offset, int64_t IC, int64_t OC) const;

  const ModelLayout* layout_;
  const Gpt2Config& config_;
  Gpt2Offsets offsets_;
};

}  // namespace accel::model
