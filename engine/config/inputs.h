// What the resolver reads besides the config files: the job file's training settings, the
// environment (passed in as a map, never read from the process here, so tests control it) and
// command-line overrides.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/config/document.h"
#include "engine/config/train_plan.h"

namespace accel::config {

// Accelerate has two sets of FSDP defaults (docs/config.md): the ones `accelerate launch`
// exports (use_orig_params, cpu_ram_efficient_loading and sync_module_states true,
// min_num_params 1e8) and the plugin's own when nothing is exported (false, false, false, 0).
enum class DefaultProfile { kLauncher, kLibrary };

// The job file's part. Unset fields are unknown: a value that needs one stays unset in the plan
// (with a warning) unless ConfigInputs::job_complete is set, when it is an error.
struct JobSettings {
  std::optional<int64_t> micro_batch_size;  // per process, per micro-step
  std::optional<int64_t> gradient_accumulation_steps;
  std::optional<double> gradient_clipping;  // 0 = off
  std::optional<double> lr;
  std::optional<double> weight_decay;
  std::optional<std::array<double, 2>> betas;
  std::optional<double> eps;
  std::optional<int64_t> warmup_steps;
  std::optional<int64_t> steps;        // optimizer steps the job runs
  std::optional<int64_t> hidden_size;  // the model's; DeepSpeed bucket "auto" values use it
  std::optional<FloatType> load_dtype;  // dtype the weights are loaded in; fp32 if unset
  // The values above are defaults standing in for a job nobody gave (`accelctl config
  // validate`): they fill "auto", but a file's value is never reported as kept over or
  // overriding them, since no job chose them.
  bool stand_in = false;
};

struct ConfigInputs {
  std::string accelerate_config;  // path of the Accelerate YAML (required)
  // Path of a DeepSpeed JSON; wins over deepspeed_config_file in the YAML (a command-line
  // --deepspeed_config_file beats the YAML in Accelerate too).
  std::string deepspeed_config;
  EnvMap env;
  JobSettings job;
  // The launcher's process count (--num-processes, WORLD_SIZE, --world-size, the job's
  // resources.num_processes): wins over the file's num_processes, with a warning naming both.
  std::optional<int> num_processes;
  std::string num_processes_source = "--num-processes";
  // The launcher's machine count: wins over the file's num_machines, with a warning.
  std::optional<int> num_machines;
  std::string num_machines_source = "resources.nodes";  // names it in messages
  std::optional<PrecisionMode> mixed_precision;  // --mixed-precision
  DefaultProfile defaults = DefaultProfile::kLauncher;
  bool job_complete = false;
  // For the files ResolvePlan opens: kPositionsOnly when acceld opens them for a client.
  Echo echo = Echo::kContent;
};

}  // namespace accel::config
