#include "engine/config/test_util.h"

#include "engine/config/document.h"
#include "engine/config/plan_json.h"
#include "engine/config/resolve.h"
#include "nlohmann/json.hpp"

namespace accel::config::testing {

const char kFsdpFullShardBase[] = R"({
  "distributed_type": "FSDP", "num_processes": 2, "num_machines": 1,
  "strategy": "full_shard", "reshard_after_forward": true,
  "offload_params": "none", "offload_optimizer": "none",
  "offload_param_nvme_path": null, "offload_optimizer_nvme_path": null,
  "wrap_policy": "transformer_based_wrap", "transformer_layer_cls_to_wrap": [],
  "min_num_params": 0, "backward_prefetch": "backward_pre", "forward_prefetch": false,
  "state_dict_type": "sharded", "save_16bit_model": false, "use_orig_params": true,
  "sync_module_states": true, "cpu_ram_efficient_loading": true, "zero3_init": true,
  "activation_checkpointing": false,
  "mixed_precision": {"mode": "no", "param_dtype": "fp32", "reduce_dtype": "fp32",
                      "master_dtype": "fp32", "optimizer_dtype": "fp32"},
  "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
  "train_micro_batch_size_per_gpu": null, "train_batch_size": null, "loss_scaling": null,
  "prefetch": {"bucket_size": 0, "param_persistence_threshold": 0, "max_live_parameters": 0,
               "max_reuse_distance": 0}
})";

const char kDeepSpeedZero3Base[] = R"({
  "distributed_type": "DEEPSPEED", "num_processes": 2, "num_machines": 1,
  "strategy": "full_shard", "reshard_after_forward": true,
  "offload_params": "none", "offload_optimizer": "none",
  "offload_param_nvme_path": null, "offload_optimizer_nvme_path": null,
  "wrap_policy": "transformer_based_wrap", "transformer_layer_cls_to_wrap": [],
  "min_num_params": 0, "backward_prefetch": "backward_pre", "forward_prefetch": true,
  "state_dict_type": "sharded", "save_16bit_model": false, "use_orig_params": true,
  "sync_module_states": true, "cpu_ram_efficient_loading": true, "zero3_init": true,
  "activation_checkpointing": false,
  "mixed_precision": {"mode": "no", "param_dtype": "fp32", "reduce_dtype": "fp32",
                      "master_dtype": "fp32", "optimizer_dtype": "fp32"},
  "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
  "train_micro_batch_size_per_gpu": null, "train_batch_size": null, "loss_scaling": null,
  "prefetch": {"bucket_size": 50000000, "param_persistence_threshold": 100000,
               "max_live_parameters": 1000000000, "max_reuse_distance": 1000000000}
})";

std::string SourcePath(std::string_view relative) {
  return std::string(ACCEL_SOURCE_DIR) + "/" + std::string(relative);
}

absl::StatusOr<TrainPlan> ResolveText(std::string_view yaml, std::string_view json,
                                      const ConfigInputs& inputs) {
  auto yaml_doc = ParseYamlDocument(yaml, "test.yaml");
  if (!yaml_doc.ok()) return yaml_doc.status();
  if (json.empty()) return ResolveDocuments(*yaml_doc, nullptr, inputs);
  auto json_doc = ParseJsonDocument(json, "test.json");
  if (!json_doc.ok()) return json_doc.status();
  return ResolveDocuments(*yaml_doc, &*json_doc, inputs);
}

absl::StatusOr<TrainPlan> ResolveFile(std::string_view relative, ConfigInputs inputs,
                                      std::string_view deepspeed_relative) {
  inputs.accelerate_config = SourcePath(relative);
  if (!deepspeed_relative.empty()) inputs.deepspeed_config = SourcePath(deepspeed_relative);
  return ResolvePlan(inputs);
}

::testing::AssertionResult PlanMatches(const TrainPlan& plan, std::string_view expected,
                                       bool complete) {
  const nlohmann::json actual = nlohmann::json::parse(PlanToJsonText(plan));
  nlohmann::json want;
  try {
    want = nlohmann::json::parse(expected);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "bad expectation JSON: " << e.what();
  }
  std::string problems;
  for (const auto& [key, value] : want.items()) {
    if (!actual.contains(key)) {
      problems += "\n  unknown plan key " + key;
    } else if (actual[key] != value) {
      problems += "\n  " + key + ": got " + actual[key].dump() + ", want " + value.dump();
    }
  }
  if (complete) {
    for (const auto& [key, value] : actual.items()) {
      if (key != "warnings" && !want.contains(key)) problems += "\n  not checked: " + key;
    }
  }
  if (problems.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "plan differs:" << problems
                                       << "\nwarnings: " << actual["warnings"].dump();
}

std::string Merge(std::string_view base, std::string_view overrides) {
  nlohmann::ordered_json b = nlohmann::ordered_json::parse(base);
  const nlohmann::ordered_json o = nlohmann::ordered_json::parse(overrides);
  for (const auto& [key, value] : o.items()) b[key] = value;
  return b.dump();
}

ConfigInputs ExampleJob() {
  ConfigInputs inputs;
  inputs.job.micro_batch_size = 2;
  inputs.job.hidden_size = 1024;
  inputs.job.lr = 1e-4;
  inputs.job.weight_decay = 0.01;
  inputs.job.steps = 500;
  return inputs;
}

bool HasWarning(const TrainPlan& plan, std::string_view needle) {
  for (const std::string& w : plan.warnings) {
    if (w.find(needle) != std::string::npos) return true;
  }
  return false;
}

}  // namespace accel::config::testing
