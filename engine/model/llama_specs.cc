#include "engine/model/llama_specs.h"

#include "absl/strings/str_cat.h"

namespace accel::model {

std::vector<ParamSpec> LlamaParamSpecs(const LlamaConfig& c) {
  const int64_t C = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
  const double std = c.initializer_range;
  std::vector<ParamSpec> specs;
  auto add = [&](std::string name, std::vector<int64_t> shape, int unit, ParamInit init) {
    const bool decay = shape.size() >= 2;
    specs.push_back({std::move(name), std::move(shape), unit, decay, init,
                     init == ParamInit::kNormal ? std : 0.0});
  };
  add("model.embed_tokens.weight", {V, C}, 0, ParamInit::kNormal);
  add("model.norm.weight", {C}, 0, ParamInit::kOnes);
  if (!c.tie_word_embeddings) add("lm_head.weight", {V, C}, 0, ParamInit::kNormal);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = absl::StrCat("model.layers.", l, ".");
    const int unit = static_cast<int>(l) + 1;
    add(p + "input_layernorm.weight", {C}, unit, ParamInit::kOnes);
    add(p + "self_attn.q_proj.weight", {c.q_dim(), C}, unit, ParamInit::kNormal);
    add(p + "self_attn.k_proj.weight", {c.kv_dim(), C}, unit, ParamInit::kNormal);
    add(p + "self_attn.v_proj.weight", {c.kv_dim(), C}, unit, ParamInit::kNormal);
    if (c.attention_bias) {
      add(p + "self_attn.q_proj.bias", {c.q_dim()}, unit, ParamInit::kZeros);
      add(p + "self_attn.k_proj.bias", {c.kv_dim()}, unit, ParamInit::kZeros);
      add(p + "self_attn.v_proj.bias", {c.kv_dim()}, unit, ParamInit::kZeros);
    }
    add(p + "self_attn.o_proj.weight", {C, c.q_dim()}, unit, ParamInit::kNormal);
    if (c.o_proj_bias()) add(p + "self_attn.o_proj.bias", {C}, unit, ParamInit::kZeros);
    if (c.qk_norm()) {
      add(p + "self_attn.q_norm.weight", {c.head_dim}, unit, ParamInit::kOnes);
      add(p + "self_attn.k_norm.weight", {c.head_dim}, unit, ParamInit::kOnes);
    }
    add(p + "post_attention_layernorm.weight", {C}, unit, ParamInit::kOnes);
    add(p + "mlp.gate_proj.weight", {I, C}, unit, ParamInit::kNormal);
    add(p + "mlp.up_proj.weight", {I, C}, unit, ParamInit::kNormal);
    if (c.mlp_bias) {
      add(p + "mlp.gate_proj.bias", {I}, unit, ParamInit::kZeros);
      add(p + "mlp.up_proj.bias", {I}, unit, ParamInit::kZeros);
    }
    add(p + "mlp.down_proj.weight", {C, I}, unit, ParamInit::kNormal);
    if (c.mlp_bias) add(p + "mlp.down_proj.bias", {C}, unit, ParamInit::kZeros);
  }
  return specs;
}

LlamaOffsets LlamaOffsetsOf(const ModelLayout& layout) {
  auto at = [&](const char* name) { return layout.OffsetInUnit(name); };
  const std::string p = "model.layers.0.";
  auto block = [&](const char* name) { return layout.OffsetInUnit(p + name); };
  return {{at("model.embed_tokens.weight"), at("model.norm.weight"), at("lm_head.weight")},
          {block("input_layernorm.weight"), block("self_attn.q_proj.weight"),
           block("self_attn.q_proj.bias"), block("self_attn.o_proj.weight"),
           block("self_attn.o_proj.bias"),
           block("post_attention_layernorm.weight"), block("mlp.gate_proj.weight"),
           block("mlp.gate_proj.bias"), block("mlp.down_proj.weight"),
           block("mlp.down_proj.bias"), block("self_attn.q_norm.weight"),
           block("self_attn.k_norm.weight")}};
}

}  // namespace accel::model
