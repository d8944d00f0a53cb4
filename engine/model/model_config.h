// ModelConfig: the shape of the model a job trains, of any supported architecture.
//
// The engine's strategies (sharding, offload, checkpoints, loading) see a model only as its
// parameter table (ModelLayout) and a ModelRunner; what differs between architectures is here
// (the shape, its Hugging Face config.json, presets), in the parameter tables
// (param_specs.h) and in the forward/backward (gpt2.h, llama.h). Adding an architecture means a
// config, a table and a model, and a case in each dispatch below.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/model/gpt2_config.h"
#include "engine/model/llama_config.h"

namespace accel::model {

enum class Architecture { kGpt2, kLlama };

class ModelConfig {
 public:
  ModelConfig() = default;
  ModelConfig(Gpt2Config c) : shape_(std::move(c)) {}   // NOLINT: implicit by design
  ModelConfig(LlamaConfig c) : shape_(std::move(c)) {}  // NOLINT

  Architecture arch() const {
    return std::holds_alternative<Gpt2Config>(shape_) ? Architecture::kGpt2 : Architecture::kLlama;
  }
  // The architecture's shape, or null for the other.
  const Gpt2Config* gpt2() const { return std::get_if<Gpt2Config>(&shape_); }
  const LlamaConfig* llama() const { return std::get_if<LlamaConfig>(&shape_); }

  const std::string& name() const;
  void set_name(std::string name);
  // Hugging Face model_type: "gpt2", "llama", "mistral", "qwen2".
  std::string model_type() const;
  // The Hugging Face class of one transformer block: GPT2Block, LlamaDecoderLayer, ...
  std::string block_class() const;
  int64_t num_layers() const;
  int64_t hidden_size() const;
  int64_t num_heads() const;
  int64_t num_kv_heads() const;  // GPT-2: num_heads
  int64_t head_dim() const;
  int64_t intermediate_size() const;  // GPT-2: 4 · hidden
  int64_t vocab_size() const;
  int64_t max_positions() const;  // n_positions / max_position_embeddings
  bool tied_embeddings() const;

  [[nodiscard]] absl::Status Validate() const;
  int64_t NumParams() const;
  double TrainFlopsPerToken(int64_t T) const;
  // One line for people: "llama 4 layers, hidden 128, 4 heads (2 kv), mlp 352, vocab 256".
  std::string Describe() const;

 private:
  std::variant<Gpt2Config, LlamaConfig> shape_;
};

// Whether cls names one transformer block of a supported architecture (GPT2Block,
// LlamaDecoderLayer, MistralDecoderLayer, Qwen2DecoderLayer) or nanoGPT's "Block".
bool IsBlockClass(std::string_view cls);

// Every preset name, GPT-2's then Llama's.
std::vector<std::string> ModelPresetNames();
// InvalidArgument listing the known presets when the name is unknown.
[[nodiscard]] absl::StatusOr<ModelConfig> ModelPreset(std::string_view name);

// A Hugging Face config.json of any supported model_type (absent: gpt2, as GPT-2's own files
// from before model_type existed). `source` names the file in errors.
[[nodiscard]] absl::StatusOr<ModelConfig> ModelConfigFromJson(std::string_view json_text,
                                                              std::string_view source);
[[nodiscard]] absl::StatusOr<ModelConfig> LoadModelConfig(Env* env, const std::string& path);
// The config.json Hugging Face's from_pretrained accepts for the same model.
std::string ModelConfigToJson(const ModelConfig& config);

}  // namespace accel::model
