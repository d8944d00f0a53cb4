// The Llama-family entry of the architecture registry (registry.h): llama, mistral, qwen2 and
// qwen3 config.json files are one network with different defaults and two options, Qwen3's
// per-head q/k norms and the sliding window (llama_config.h). Qwen3 is an option here rather
// than an entry of its own: its tables, activations and runner are this family's with two more
// tensors per layer, and nothing outside engine/model asks which it is.
#include "engine/model/llama.h"
#include "engine/model/decoders.h"
#include "engine/model/registry.h"

namespace accel::model {
namespace {

const LlamaConfig& Of(const ModelConfig& c) { return *c.As<LlamaConfig>(); }

Architecture MakeLlama() {
  Architecture a;
  a.name = "llama";
  a.model_types = {"llama", "mistral", "qwen2", "qwen3"};
  a.block_classes = {"LlamaDecoderLayer", "MistralDecoderLayer", "Qwen2DecoderLayer",
                     "Qwen3DecoderLayer"};
  a.positions_key = "max_position_embeddings";
  a.from_json = [](std::string_view text, std::string_view source) -> absl::StatusOr<ModelConfig> {
    return LlamaConfigFromJson(text, source);
  };
  a.to_json = [](const ModelConfig& c) { return LlamaConfigToJson(Of(c)); };
  a.preset_names = LlamaPresetNames;
  a.preset = [](std::string_view name) -> absl::StatusOr<ModelConfig> { return LlamaPreset(name); };
  a.param_specs = [](const ModelConfig& c) { return LlamaParamSpecs(Of(c)); };
  a.activation_bytes = [](const ModelConfig& c, int64_t B, int64_t T, ActivationOptions o) {
    return LlamaActivations::PlannedBytes(Of(c), B, T, o);
  };
  a.bf16_only_ranges = [](const ModelLayout& layout, int unit) {
    return Llama(&layout).MatmulWeightRanges(unit);
  };
  a.hf.is_buffer = [](std::string_view name) {
    return name.ends_with(".self_attn.rotary_emb.inv_freq");
  };
  a.hf.embedding = "model.embed_tokens.weight";
  a.cpu_runner = [](const ModelLayout* layout, const CpuRunnerOptions& o) {
    return MakeCpuRunner<Llama, LlamaActivations>(layout, Of(layout->config()), o);
  };
  a.decoder = MakeLlamaDecoder;
  // The Llama-family CUDA kernels exist (engine/kernels/cuda); the CUDA model does not yet.
  a.devices = {"cpu"};
  a.display = {.name = "Llama", .mlp = "SwiGLU", .details = true};
  return a;
}

}  // namespace

const Architecture& LlamaConfig::Family() {
  static const Architecture* entry = new Architecture(MakeLlama());
  return *entry;
}

}  // namespace accel::model
