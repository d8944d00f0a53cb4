// ModelShape: the figures every architecture family's config answers, whatever its own field
// names (GPT-2's n_layer, Llama's num_hidden_layers). ModelConfig forwards its getters to it;
// each family config computes one in its Shape() (model_config.h, FamilyConfig).
#pragma once

#include <cstdint>
#include <string>

namespace accel::model {

struct ModelShape {
  std::string model_type;   // Hugging Face model_type: "gpt2", "llama", "mistral", "qwen2"
  std::string block_class;  // the HF class of one block: GPT2Block, LlamaDecoderLayer, ...
  int64_t num_layers = 0;
  int64_t hidden_size = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // = num_heads without grouped-query attention
  int64_t head_dim = 0;
  int64_t intermediate_size = 0;  // the MLP's width (GPT-2: 4 · hidden)
  int64_t vocab_size = 0;
  int64_t max_positions = 0;
  bool tied_embeddings = false;
};

}  // namespace accel::model
