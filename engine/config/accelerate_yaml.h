// The Accelerate config YAML (what `accelerate config` writes), read into typed fields.
//
// Every key is checked: an unknown key is an error with "did you mean" (Accelerate rejects
// unknown top-level keys but silently drops unknown keys inside fsdp_config/deepspeed_config;
// we reject both). Keys inside fsdp_config may omit the fsdp_ prefix, as in Accelerate. Legacy
// keys are accepted with a warning saying what they became:
//   fp16: true                      -> mixed_precision: fp16
//   dynamo_backend                  -> dynamo_config.dynamo_backend
//   fsdp_backward_prefetch_policy   -> fsdp_backward_prefetch (Accelerate 1.x ignores it)
//   spaces in fsdp_transformer_layer_cls_to_wrap are stripped (Accelerate fails on them)
// A SageMaker config (compute_environment: AMAZON_SAGEMAKER) is refused with that one error,
// before anything else is read; keys given twice (Document::duplicate_keys) are errors.
// A field is nullopt when the key is absent or null; precedence and defaults are applied by
// the resolver, not here. Values are parsed as values.h describes.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/config/diagnostics.h"
#include "engine/config/train_plan.h"

namespace accel::config {

struct FsdpSection {
  bool present = false;  // a non-empty fsdp_config mapping
  std::optional<int> version;
  std::optional<Strategy> sharding_strategy;
  // fsdp_reshard_after_forward holds a bool (FSDP2) or, as the FSDP1 questionnaire writes it, a
  // strategy name; at most one of these is set.
  std::optional<bool> reshard_after_forward;
  std::optional<Strategy> reshard_after_forward_strategy;
  std::optional<bool> offload_params;
  std::optional<WrapPolicy> auto_wrap_policy;
  std::optional<std::vector<std::string>> transformer_layer_cls_to_wrap;
  std::optional<int64_t> min_num_params;
  std::optional<BackwardPrefetch> backward_prefetch;
  std::optional<bool> forward_prefetch;
  std::optional<StateDictType> state_dict_type;
  std::optional<bool> use_orig_params;
  std::optional<bool> cpu_ram_efficient_loading;
  std::optional<bool> sync_module_states;
  std::optional<bool> activation_checkpointing;
  std::optional<std::string> ignored_modules;
};

struct DeepSpeedSection {
  bool present = false;  // a non-empty deepspeed_config mapping
  std::set<std::string> keys;  // keys given with a non-null value
  std::optional<int> zero_stage;
  std::optional<OffloadDevice> offload_optimizer_device;
  std::optional<OffloadDevice> offload_param_device;
  std::optional<std::string> offload_optimizer_nvme_path;
  std::optional<std::string> offload_param_nvme_path;
  std::optional<int64_t> gradient_accumulation_steps;  // "auto" reads as absent
  std::optional<double> gradient_clipping;             // "auto" reads as absent
  std::optional<bool> zero3_init_flag;
  std::optional<bool> zero3_save_16bit_model;
  std::optional<std::string> deepspeed_config_file;
  std::optional<std::string> multinode_launcher;
  std::optional<std::string> hostfile;
};

// FSDP2's device mesh (parallelism_config); nullopt sizes were not given.
struct ParallelismSection {
  bool present = false;
  std::optional<int> dp_replicate_size;
  std::optional<int> dp_shard_size;
  std::optional<int> tp_size;
  std::optional<int> cp_size;
};

struct AccelerateConfig {
  std::string source;
  std::optional<DistributedType> distributed_type;
  std::optional<PrecisionMode> mixed_precision;
  bool mixed_precision_given = false;  // the key is in the file, even as 'no'
  std::optional<int> num_processes;    // -1 (Accelerate's "not set") reads as absent
  std::optional<int> num_machines;
  std::optional<int> machine_rank;
  std::optional<std::string> main_process_ip;
  std::optional<int> main_process_port;
  std::optional<std::string> rdzv_backend;
  std::optional<bool> same_network;
  std::optional<bool> use_cpu;
  FsdpSection fsdp;
  DeepSpeedSection deepspeed;
  ParallelismSection parallelism;
};

// Reads `doc` (from ParseYamlDocument). Problems go to diag; the returned config holds what
// could be read. A document that is not a mapping is reported and yields an empty config.
AccelerateConfig ReadAccelerateConfig(const Document& doc, Diagnostics* diag);

// Internal: the two nested sections (accelerate_sections.cc).
class Reader;
void ReadFsdpSection(Reader& r, FsdpSection* out);
void ReadDeepSpeedSection(Reader& r, DeepSpeedSection* out);

// The accepted keys, for "did you mean" and the docs.
const std::vector<std::string_view>& AccelerateTopLevelKeys();
const std::vector<std::string_view>& FsdpConfigKeys();
const std::vector<std::string_view>& DeepSpeedConfigKeys();

}  // namespace accel::config
