// Llama-family decoder forward and backward over the kernels, one unit at a time through
// ParamAccess, in Hugging Face's LlamaForCausalLM conventions (llama_config.h):
//   x = embed_tokens[tok]
//   per layer: h = x + o_proj(attention(rope(q, k), v)) on input_layernorm(x)   (RMSNorm);
//              qwen3 normalises q and k per head first (q_norm, k_norm: RMSNorm over head_dim);
//              attention is causal, within the layer's sliding window where it has one
//              x = h + down_proj(silu(gate_proj(n)) * up_proj(n)), n = post_attention_layernorm(h)
//   logits = lm_head(norm(x))  (lm_head = embed_tokens when tied)
// Grouped-query attention: query head h reads key/value head h / (heads / kv_heads). q/k/v come
// from one matmul with the unit's (Q + 2K, C) weight block and the MLP's gate and up from one
// with its (2I, C) block (llama_specs.h orders the tensors so). Loss is the mean cross-entropy
// over B·T positions. Units and the ParamAccess call order are GPT-2's (param_access.h).
//
// LlamaActivations holds what forward saves for backward at one (B, T), with the RoPE tables
// for T. Thread safety: one LlamaActivations per concurrent caller; kernels use the OpenMP pool.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/memory_ledger.h"
#include "engine/model/activation_options.h"
#include "engine/model/llama_specs.h"
#include "engine/model/param_access.h"
#include "engine/model/param_specs.h"
#include "engine/tensor/buffer.h"

namespace accel::model {

// What one decoder layer's forward writes, as pointers into LlamaActivations' storage.
struct LlamaBlockActivations {
  float *in_norm, *in_rstd, *qkv, *att, *atty, *residual2, *post_norm, *post_rstd, *gate_up,
      *swiglu, *residual3;
  // qk_norm (qwen3) only, else null: the projection's output before the per-head norms
  // (B, T, QKV) and their rstd (B, T, H + KV).
  float *qkv_pre = nullptr, *qk_rstd = nullptr;
};

class LlamaActivations {
 public:
  // Allocates for batch B and sequence T (charged as activations to `ledger`, in `pool`).
  [[nodiscard]] static absl::StatusOr<LlamaActivations> Create(const LlamaConfig& config,
                                                               int64_t B, int64_t T,
                                                               MemoryPool pool,
                                                               MemoryLedger* ledger = nullptr,
                                                               ActivationOptions options = {});
  // The bytes Create allocates for the same arguments, without allocating.
  [[nodiscard]] static absl::StatusOr<int64_t> PlannedBytes(const LlamaConfig& config, int64_t B,
                                                            int64_t T, ActivationOptions options);
  int64_t B() const { return B_; }
  int64_t T() const { return T_; }
  int64_t bytes() const;
  bool bf16_matmuls() const { return options_.bf16_matmuls; }
  bool checkpoint_blocks() const { return options_.checkpoint_blocks; }

  const float* logits() const { return logits_; }  // (B, T, V) after Forward
  const float* losses() const { return losses_; }  // (B, T)

 private:
  friend class Llama;
  friend struct LlamaActivationLayout;  // llama_activations.cc
  LlamaBlockActivations Block(int64_t l) const;

  int64_t B_ = 0, T_ = 0;
  ActivationOptions options_;
  std::vector<Buffer> storage_;
  float *encoded_ = nullptr, *norm_ = nullptr, *norm_rstd_ = nullptr, *logits_ = nullptr,
        *losses_ = nullptr, *rope_cos_ = nullptr, *rope_sin_ = nullptr;
  std::vector<LlamaBlockActivations> blocks_;  // checkpoint_blocks: only residual3 is set
  LlamaBlockActivations working_{};            // checkpoint_blocks: one block's working set
  // Backward scratch, reused across layers.
  float *dresidual_ = nullptr, *dln_ = nullptr, *dqkv_ = nullptr, *datty_ = nullptr,
        *dgate_up_ = nullptr, *dswiglu_ = nullptr;
  // bf16 copies of a matmul's input and output gradient, made just before it (bf16_matmuls).
  uint16_t *inp16_ = nullptr, *dout16_ = nullptr;
};

class Llama {
 public:
  // layout: a Llama config's (layout->config().As<LlamaConfig>() not null), outliving the model.
  explicit Llama(const ModelLayout* layout);
  // Ranges of unit u (relative to the unit, sorted) read only through ParamsBf16 when the model
  // multiplies in bf16: the layers' matmul weights, and an untied lm_head.
  std::vector<std::pair<int64_t, int64_t>> MatmulWeightRanges(int unit) const;

  // As Gpt2::Forward / Gpt2::Backward (gpt2.h).
  [[nodiscard]] absl::StatusOr<float> Forward(ParamAccess& params, const int32_t* inputs,
                                              const int32_t* targets, LlamaActivations& acts) const;
  [[nodiscard]] absl::Status Backward(ParamAccess& params, const int32_t* inputs,
                                      const int32_t* targets, LlamaActivations& acts,
                                      float dloss = 1.0f) const;

 private:
  // Layer l's forward from its input into L; without `output` it stops before down_proj.
  void BlockForward(LlamaActivations& a, int64_t l, const float* p, const uint16_t* p16,
                    const float* residual, const LlamaBlockActivations& L, bool output) const;
  // qwen3: L.qkv's q and k heads = q_norm / k_norm of L.qkv_pre's, its v copied.
  void QkNormForward(LlamaActivations& a, const float* p, const LlamaBlockActivations& L) const;
  // The backward of QkNormForward, in place on a.dqkv_ (v's rows pass through).
  void QkNormBackward(LlamaActivations& a, const float* p, float* g,
                      const LlamaBlockActivations& L) const;
  void BlockBackward(LlamaActivations& a, const float* p, const uint16_t* p16, float* g,
                     const float* residual, const LlamaBlockActivations& L) const;
  // out (BT, OC) = inp (BT, IC) · Wᵀ + b, W (OC, IC) at w_offset of unit params p (bf16 copy
  // p16, or null for fp32); b_offset -1 for no bias. Backward accumulates into unit grads g.
  void Linear(LlamaActivations& a, float* out, const float* inp, const float* p,
              const uint16_t* p16, int64_t w_offset, int64_t b_offset, int64_t IC,
              int64_t OC) const;
  void LinearBackward(LlamaActivations& a, float* dinp, float* g, const float* dout,
                      const float* inp, const float* p, const uint16_t* p16, int64_t w_offset,
                      int64_t b_offset, int64_t IC, int64_t OC) const;

  const ModelLayout* layout_;
  const LlamaConfig& config_;
  LlamaOffsets offsets_;
};

}  // namespace accel::model
