// Llama-family model shape (Llama 2/3, Mistral, Qwen2, Qwen3, SmolLM, TinyLlama): presets and
// Hugging Face config.json files.
//
// One network: pre-norm RMSNorm decoder layers with rotary position embeddings (Hugging Face's
// rotate-half convention), grouped-query causal attention, a SwiGLU MLP
// (down(silu(gate(x)) * up(x))), a final RMSNorm and an lm_head tied to the embeddings or not.
// The model types differ only in defaults and two options: qwen2 always has q/k/v biases; qwen3
// normalises each query and key head (RMSNorm over head_dim, before RoPE); mistral names a
// sliding window, qwen2 and qwen3 may (use_sliding_window, on layers from max_window_layers on).
// Every Hugging Face key that changes this math is either implemented or refused
// with an error naming it (docs/models.md lists both).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/model/model_shape.h"

namespace accel::model {

struct Architecture;  // registry.h

// rope_scaling of Hugging Face's config: none, "linear" (positions divided by factor) or "llama3"
// (Llama 3.1's frequency-dependent rescaling of inv_freq).
struct RopeScaling {
  enum class Type { kNone, kLinear, kLlama3 };
  Type type = Type::kNone;
  double factor = 1.0;
  double low_freq_factor = 1.0;                  // llama3
  double high_freq_factor = 4.0;                 // llama3
  int64_t original_max_position_embeddings = 0;  // llama3
};

struct LlamaConfig {
  std::string name = "custom";
  // llama, mistral, qwen2 or qwen3: the decoder layer's class name, and qk_norm() for qwen3.
  std::string model_type = "llama";
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // hidden_size / num_attention_heads unless the file gives it
  int64_t num_hidden_layers = 0;
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  // q/k/v biases, and o_proj's too except in qwen2 (Hugging Face's LlamaAttention applies the
  // key to all four projections; Qwen2Attention has q/k/v biases always and none on o_proj).
  bool attention_bias = false;
  bool mlp_bias = false;
  double initializer_range = 0.02;
  // Sliding-window attention (Mistral's semantics): query i sees key j when
  // 0 <= i - j < sliding_window; 0 for full causal attention. It binds only on sequences longer
  // than the window. Layers below max_window_layers keep full attention (Qwen2/Qwen3's rule; 0
  // for Mistral, where every layer has the window).
  int64_t sliding_window = 0;
  int64_t max_window_layers = 0;

  int64_t q_dim() const { return num_attention_heads * head_dim; }
  int64_t kv_dim() const { return num_key_value_heads * head_dim; }
  bool o_proj_bias() const { return attention_bias && model_type != "qwen2"; }
  // Qwen3: self_attn.{q,k}_norm, an RMSNorm (weights (head_dim), rms_norm_eps) on every query and
  // key head after the projection and before RoPE.
  bool qk_norm() const { return model_type == "qwen3"; }
  // The attention window of layer l (0 <= l < num_hidden_layers): sliding_window, or 0 (none).
  int64_t AttentionWindow(int64_t layer) const {
    return layer >= max_window_layers ? sliding_window : 0;
  }
  // InvalidArgument naming the field: sizes positive and bounded, heads divisible by kv heads,
  // head_dim even (RoPE rotates pairs), finite positive eps and theta.
  [[nodiscard]] absl::Status Validate() const;
  int64_t NumParams() const;
  // Training FLOPs per token: 6 per parameter that multiplies (the embedding lookup does not
  // when the lm_head is untied) plus 6·L·(heads·head_dim)·T for attention, as GPT-2's estimate.
  double TrainFlopsPerToken(int64_t T) const;
  // The Hugging Face class of one decoder layer: LlamaDecoderLayer, MistralDecoderLayer,
  // Qwen2DecoderLayer, Qwen3DecoderLayer (FSDP's transformer_layer_cls_to_wrap names it).
  std::string DecoderLayerClass() const;
  // inv_freq (head_dim / 2 values) after rope_scaling, as Hugging Face computes it.
  std::vector<double> InverseFrequencies() const;
  // The shape in the registry's terms.
  ModelShape Shape() const;
  // The Llama-family entry of the architecture registry (llama_family.cc).
  static const Architecture& Family();
};

std::vector<std::string> LlamaPresetNames();
// NotFound (not InvalidArgument: the caller tries other architectures) for an unknown name.
[[nodiscard]] absl::StatusOr<LlamaConfig> LlamaPreset(std::string_view name);

// True for the model_type values this file parses.
bool IsLlamaModelType(std::string_view model_type);
// Parses a Hugging Face LlamaConfig / MistralConfig / Qwen2Config / Qwen3Config config.json with
// Hugging Face's defaults for absent keys. `source` names the file in errors.
[[nodiscard]] absl::StatusOr<LlamaConfig> LlamaConfigFromJson(std::string_view json_text,
                                                              std::string_view source);
// A config.json Hugging Face's AutoModelForCausalLM accepts for the same model.
std::string LlamaConfigToJson(const LlamaConfig& config);

}  // namespace accel::model
