// The GPT-2 entry of the architecture registry (registry.h).
#include "engine/model/gpt2.h"
#include "engine/model/decoders.h"
#include "engine/model/registry.h"

namespace accel::model {
namespace {

const Gpt2Config& Of(const ModelConfig& c) { return *c.As<Gpt2Config>(); }

Architecture MakeGpt2() {
  Architecture a;
  a.name = "gpt2";
  a.model_types = {"gpt2"};
  a.reads_untyped_files = true;
  a.block_classes = {"GPT2Block"};
  a.positions_key = "n_positions";
  a.from_json = [](std::string_view text, std::string_view source) -> absl::StatusOr<ModelConfig> {
    return Gpt2ConfigFromJson(text, source);
  };
  a.to_json = [](const ModelConfig& c) { return Gpt2ConfigToJson(Of(c)); };
  a.preset_names = Gpt2PresetNames;
  a.preset = [](std::string_view name) -> absl::StatusOr<ModelConfig> { return Gpt2Preset(name); };
  a.param_specs = [](const ModelConfig& c) { return Gpt2ParamSpecs(Of(c)); };
  a.activation_bytes = [](const ModelConfig& c, int64_t B, int64_t T, ActivationOptions o) {
    return Gpt2Activations::PlannedBytes(Of(c), B, T, o);
  };
  a.bf16_only_ranges = [](const ModelLayout& layout, int unit) {
    return Gpt2(&layout).MatmulWeightRanges(unit);
  };
  a.hf.prefix = "transformer.";
  a.hf.is_buffer = [](std::string_view name) {
    return name.starts_with("h.") &&
           (name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias"));
  };
  a.hf.embedding = "wte.weight";
  a.cpu_runner = [](const ModelLayout* layout, const CpuRunnerOptions& o) {
    return MakeCpuRunner<Gpt2, Gpt2Activations>(layout, Of(layout->config()), o);
  };
  a.decoder = MakeGpt2Decoder;
  a.devices = {"cpu", "cuda"};  // cuda: engine/model/cuda/cuda_runners.cc
  a.display = {.name = "GPT-2", .mlp = "GELU", .details = false};
  return a;
}

}  // namespace

const Architecture& Gpt2Config::Family() {
  static const Architecture* entry = new Architecture(MakeGpt2());
  return *entry;
}

}  // namespace accel::model
