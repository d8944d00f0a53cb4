// The Llama-family parameter table (Hugging Face LlamaForCausalLM names) and where Llama finds
// its tensors in a unit.
//
// Shapes are nn.Linear's ([out, in], y = x·Wᵀ + b). C = hidden_size, I = intermediate_size,
// Q = num_attention_heads·head_dim, K = num_key_value_heads·head_dim:
//   unit 0 (root):  model.embed_tokens.weight (V, C), model.norm.weight (C),
//                   lm_head.weight (V, C) unless tie_word_embeddings
//   unit 1 + l:     model.layers.l.input_layernorm.weight (C),
//                   self_attn.{q_proj (Q, C), k_proj (K, C), v_proj (K, C)}.weight,
//                   [self_attn.{q,k,v}_proj.bias (Q), (K), (K) with attention_bias],
//                   self_attn.o_proj.weight (C, Q), [self_attn.o_proj.bias (C) with
//                   attention_bias, except qwen2], [self_attn.{q,k}_norm.weight (D) in qwen3,
//                   D = head_dim], post_attention_layernorm.weight (C),
//                   mlp.{gate_proj, up_proj}.weight (I, C), [mlp.{gate,up}_proj.bias (I)],
//                   mlp.down_proj.weight (C, I), [mlp.down_proj.bias (C)]
// The order is chosen so that q/k/v weights are one (Q + 2K, C) matrix (one matmul gives the
// packed [q | k | v] rows attention reads) and gate/up one (2I, C) matrix ([gate | up] rows);
// their biases likewise. Initialisation as Hugging Face's: N(0, initializer_range) for
// embeddings and linear weights, RMSNorm weights 1, biases 0.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model/llama_config.h"
#include "engine/model/param_specs.h"

namespace accel::model {

std::vector<ParamSpec> LlamaParamSpecs(const LlamaConfig& config);

// Element offsets inside one unit's contiguous range; -1 for a tensor the config does not have.
struct LlamaRootOffsets {
  int64_t embed, norm, lm_head;  // lm_head -1 when tied
};
struct LlamaBlockOffsets {
  int64_t input_norm, qkv_w, qkv_b, o_w, o_b, post_norm, gate_up_w, gate_up_b, down_w, down_b;
  int64_t q_norm, k_norm;  // qwen3's per-head RMSNorm weights (head_dim each)
};
struct LlamaOffsets {
  LlamaRootOffsets root;
  LlamaBlockOffsets block;  // identical for every block
};
// For a layout of a Llama config (layout.config().As<LlamaConfig>() not null).
LlamaOffsets LlamaOffsetsOf(const ModelLayout& layout);

}  // namespace accel::model
