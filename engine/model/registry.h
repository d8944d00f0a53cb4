// The architecture registry: one entry per model family, and the only place that knows which
// families exist (torchtitan's TrainSpec). An entry says everything the engine, the job door and
// the client need of a family: its Hugging Face model_type names, config reader and writer,
// presets, parameter table, activation plan, Hugging Face tensor names, runners per device, the
// devices it trains on, the FSDP wrap class and how people see it. Code outside engine/model
// asks a config's entry (ModelConfig::architecture()) or looks one up by model_type here; it
// never asks which family it has.
//
// Built in: GPT-2 (gpt2_family.cc) and the Llama family (llama, mistral, qwen2, qwen3;
// llama_family.cc). Adding an architecture is a new entry: its config type (a FamilyConfig,
// model_config.h, whose Family() returns the entry), its tables and model, and a line in
// registry.cc's list (or RegisterArchitecture, as the toy family of
// engine/train/toy_architecture_test.cc does). docs/models.md, "Adding an architecture".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/model/activation_options.h"
#include "engine/model/kv_decoder.h"
#include "engine/model/model_config.h"
#include "engine/model/model_runner.h"
#include "engine/model/param_specs.h"

namespace accel::model {

// How a family's tensors are named in Hugging Face checkpoint files (the table's own names are
// HF's, param_specs.h), for reading them (checkpoint/hf_model_file.h) and writing them.
struct HfTensorNames {
  // A prefix some files put before every table name (GPT2LMHeadModel's "transformer."), or "".
  std::string prefix;
  // Tensors some files carry that are not parameters (GPT-2's attention masks, Llama's rotary
  // inv_freq): skipped on read. Given the name without `prefix`.
  std::function<bool(std::string_view name)> is_buffer;
  // The table tensor a file's tied lm_head.weight must match in shape (the token embedding).
  std::string embedding;
};

// How a plan summary shows the family (client/event_format.cc).
struct ArchitectureDisplay {
  std::string name;  // for people: "GPT-2", "Llama"
  // The MLP's kind ("GELU", "SwiGLU"); with `details`, summaries print head_dim, the MLP, the
  // lm_head and the block class, which for GPT-2 follow from its width.
  std::string mlp;
  bool details = true;
};

struct Architecture {
  // The family, in messages and as the registry's key: "gpt2", "llama".
  std::string name;
  // The config.json model_type values this family reads (first: its own name).
  std::vector<std::string> model_types;
  // This family reads config.json files without a model_type (GPT-2's predate the key).
  bool reads_untyped_files = false;
  // Every HF class its blocks go by (fsdp_transformer_layer_cls_to_wrap; the config's own is
  // ModelConfig::block_class()).
  std::vector<std::string> block_classes;
  // The config.json key of ModelConfig::max_positions(): "n_positions", "max_position_embeddings".
  std::string positions_key;

  // config.json → the family's config (InvalidArgument naming `source` and the key).
  std::function<absl::StatusOr<ModelConfig>(std::string_view json_text, std::string_view source)>
      from_json;
  // The config.json Hugging Face's from_pretrained accepts for the same model.
  std::function<std::string(const ModelConfig&)> to_json;
  std::function<std::vector<std::string>()> preset_names;
  // One of preset_names().
  std::function<absl::StatusOr<ModelConfig>(std::string_view name)> preset;

  // The parameter table (param_specs.h: unit 0 the root, 1 + l block l).
  std::function<std::vector<ParamSpec>(const ModelConfig&)> param_specs;
  // The bytes the CPU runner's activations for (B, T) take, without allocating; InvalidArgument
  // for a bad B or T (T above the model's positions included).
  std::function<absl::StatusOr<int64_t>(const ModelConfig&, int64_t B, int64_t T,
                                        ActivationOptions)>
      activation_bytes;
  // The ranges of unit u (relative to the unit, sorted) the model reads only through
  // ParamAccess::ParamsBf16 when it multiplies in bf16.
  std::function<std::vector<std::pair<int64_t, int64_t>>(const ModelLayout&, int unit)>
      bf16_only_ranges;
  HfTensorNames hf;

  // The CPU runner (every family has one). A family's CUDA runner, where it has one, is in
  // engine/model/cuda (cuda_runners.h), which the CUDA build links; `devices` says where the
  // family trains, so a build without CUDA answers the same.
  std::function<absl::StatusOr<std::unique_ptr<ModelRunner>>(const ModelLayout*,
                                                              const CpuRunnerOptions&)>
      cpu_runner;
  std::vector<std::string> devices;  // "cpu", "cuda"
  // The KV-cache decoder generation runs on (kv_decoder.h; engine/generate), over the caller's
  // flat fp32 parameters; null for a family that cannot generate (generation says so).
  std::function<absl::StatusOr<std::unique_ptr<KvDecoder>>(const ModelLayout*, const float*,
                                                            const DecoderOptions&)>
      decoder;
  bool TrainsOn(std::string_view device) const;

  ArchitectureDisplay display;
};

// Every registered family, built-in first, in registration order.
std::vector<const Architecture*> Architectures();
// The family that reads `model_type` (one of its model_types), or null.
const Architecture* FindArchitecture(std::string_view model_type);
// Every model_type the registry reads, family by family: "gpt2, llama, mistral, qwen2, qwen3".
std::vector<std::string> SupportedModelTypes();
// The families that train on `device`, by display name ("GPT-2").
std::vector<std::string> FamiliesOn(std::string_view device);

// Adds a family. `entry` must outlive every use (a static). AlreadyExists naming the
// model_type when another family reads it; InvalidArgument when a field every family needs is
// missing (naming the field).
[[nodiscard]] absl::Status RegisterArchitecture(const Architecture* entry);

}  // namespace accel::model
