// LlamaActivations: where forward keeps what backward reads (llama.h), laid out through
// activation_arena.h as Gpt2Activations are.
#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/model/activation_arena.h"
#include "engine/model/llama.h"

namespace accel::model {
namespace {

using arena::Allocation;
using arena::At;
using arena::At16;
using arena::Overlay;
using arena::Own;
using arena::Part;

// The parts of one layer's forward working set (everything but its output).
Overlay WorkingSet(LlamaBlockActivations& L, const LlamaConfig& c, int64_t B, int64_t T) {
  const int64_t BT = B * T, C = c.hidden_size, I = c.intermediate_size;
  const int64_t H = c.num_attention_heads;
  Overlay parts = {At(&L.in_norm, BT * C),
                   At(&L.in_rstd, BT),
                   At(&L.qkv, BT * (c.q_dim() + 2 * c.kv_dim())),
                   At(&L.att, B * H * T * T),
                   At(&L.atty, BT * c.q_dim()),
                   At(&L.residual2, BT * C),
                   At(&L.post_norm, BT * C),
                   At(&L.post_rstd, BT),
                   At(&L.gate_up, BT * 2 * I),
                   At(&L.swiglu, BT * I)};
  if (c.qk_norm()) {  // qwen3: the projection before the per-head norms, and their rstd
    parts.push_back(At(&L.qkv_pre, BT * (c.q_dim() + 2 * c.kv_dim())));
    parts.push_back(At(&L.qk_rstd, BT * (H + c.num_key_value_heads)));
  }
  return parts;
}

}  // namespace

struct LlamaActivationLayout {
  // Every allocation of `a` for (B, T) under `options`, the parts' addresses going into `a`.
  static std::vector<Allocation> Of(const LlamaConfig& c, int64_t B, int64_t T,
                                    ActivationOptions options, LlamaActivations& a) {
    const int64_t BT = B * T, C = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
    const int64_t QKV = c.q_dim() + 2 * c.kv_dim();
    a.B_ = B;
    a.T_ = T;
    a.options_ = options;
    a.blocks_.assign(c.num_hidden_layers, LlamaBlockActivations{});
    std::vector<Allocation> out;
    for (Part part : {At(&a.encoded_, BT * C), At(&a.norm_, BT * C), At(&a.norm_rstd_, BT),
                      At(&a.losses_, BT), At(&a.dresidual_, BT * C), At(&a.dln_, BT * C),
                      At(&a.rope_cos_, T * c.head_dim / 2), At(&a.rope_sin_, T * c.head_dim / 2)}) {
      Own(out, std::move(part));
    }
    const Overlay backward_scratch = {At(&a.dqkv_, BT * QKV), At(&a.datty_, BT * c.q_dim()),
                                      At(&a.dgate_up_, BT * 2 * I), At(&a.dswiglu_, BT * I)};
    if (options.checkpoint_blocks) {
      for (LlamaBlockActivations& L : a.blocks_) Own(out, At(&L.residual3, BT * C));
      // The logits are live from the head's forward to the head's backward; one layer's working
      // set and the backward's scratch only before and after that.
      Overlay working = WorkingSet(a.working_, c, B, T);
      working.insert(working.end(), backward_scratch.begin(), backward_scratch.end());
      out.push_back({{{At(&a.logits_, BT * V)}, std::move(working)}});
    } else {
      Own(out, At(&a.logits_, BT * V));
      for (LlamaBlockActivations& L : a.blocks_) {
        for (Part& part : WorkingSet(L, c, B, T)) Own(out, std::move(part));
        Own(out, At(&L.residual3, BT * C));
      }
      for (const Part& part : backward_scratch) Own(out, part);
    }
    if (options.bf16_matmuls) {
      Own(out, At16(&a.inp16_, BT * std::max({C, c.q_dim(), I})));
      Own(out, At16(&a.dout16_, BT * std::max({QKV, C, 2 * I, V})));
    }
    return out;
  }
};

absl::StatusOr<LlamaActivations> LlamaActivations::Create(const LlamaConfig& c, int64_t B,
                                                          int64_t T, MemoryPool pool,
                                                          MemoryLedger* ledger,
                                                          ActivationOptions options) {
  ACCEL_RETURN_IF_ERROR(arena::CheckShape(B, T, c.max_position_embeddings));
  LlamaActivations a;
  ACCEL_ASSIGN_OR_RETURN(a.storage_,
                         arena::Allocate(LlamaActivationLayout::Of(c, B, T, options, a), pool,
                                         ledger));
  // The rotary tables for positions 0..T-1, angles in double and rounded once.
  const std::vector<double> inv_freq = c.InverseFrequencies();
  const int64_t half = c.head_dim / 2;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(t) * inv_freq[i];
      a.rope_cos_[t * half + i] = static_cast<float>(std::cos(angle));
      a.rope_sin_[t * half + i] = static_cast<float>(std::sin(angle));
    }
  }
  return a;
}

absl::StatusOr<int64_t> LlamaActivations::PlannedBytes(const LlamaConfig& c, int64_t B,
                                                       int64_t T, ActivationOptions options) {
  ACCEL_RETURN_IF_ERROR(arena::CheckShape(B, T, c.max_position_embeddings));
  LlamaActivations unused;
  return arena::PlannedFloats(LlamaActivationLayout::Of(c, B, T, options, unused)) *
         static_cast<int64_t>(sizeof(float));
}

int64_t LlamaActivations::bytes() const { return arena::TotalBytes(storage_); }

LlamaBlockActivations LlamaActivations::Block(int64_t l) const {
  if (!options_.checkpoint_blocks) return blocks_[l];
  LlamaBlockActivations L = working_;
  L.residual3 = blocks_[l].residual3;
  return L;
}

}  // namespace accel::model
