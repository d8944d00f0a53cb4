// The lowering: the one place where a config file and a job become what the engine runs
// (DESIGN.md §1, "One plan"). acceld calls it at submit (a job submit accepts is one its
// workers will run), `accelctl config explain` prints it, and both worker modes train what it
// returns. Nothing else resolves configs or turns a plan into engine options.
//
//   LoweringInputs ──resolve (resolve.h)──▶ TrainPlan ──ApplyTrainPlan──▶ TrainOptions
//        │  (the job's values fill "auto";          (every field the plan decides; the job
//        │   the launcher's count wins over           keeps model, data, steps, seeds, ...)
//        │   num_processes, with a warning)                    │
//        └──────────── command-line overrides ─────────────────┤
//                                                              ▼
//                         engine checks: ValidateTrainOptions, the model's config, the
//                         ShardPlan of rank 0 over the real world, the offload directory
//
// Every refusal is InvalidArgument (NotFound for a missing file), every problem on its own
// line, each naming the file and key path it came from (a config key, or the job's own key or
// flag). Thread-safe; reads files only through the Env it is given.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/config/inputs.h"
#include "engine/config/train_options.h"
#include "engine/config/train_plan.h"
#include "engine/model/model_config.h"

namespace accel::config {

// One config file: the name messages give it (the path the user wrote) and, when it was read
// already (a JobSpec carries the text), its text. Empty text with a name: read through the Env.
struct ConfigFile {
  std::string name;
  std::string text;
  // kPositionsOnly: a file acceld reads (or read) for a client; no error quotes it (echo.h).
  Echo echo = Echo::kContent;
  bool given() const { return !name.empty() || !text.empty(); }
};

struct LoweringInputs {
  // The job's own settings: model, data, loop, optimizer, schedule and, with no config file,
  // its sharding. A config replaces what it decides; the job's values fill its "auto" fields.
  TrainOptions job;
  // An Accelerate YAML and, optionally, a DeepSpeed JSON. Neither: the job's settings are the
  // plan. A JSON alone runs under an implied `distributed_type: DEEPSPEED` YAML.
  ConfigFile accelerate;
  ConfigFile deepspeed;
  // FSDP_* / ACCELERATE_* variables, as Accelerate's plugins read them (empty for daemon jobs:
  // the workers' environment is acceld's, not the user's).
  EnvMap env;
  // The launcher's process count and what said it ("WORLD_SIZE", "--world-size",
  // "resources.num_processes"). It wins over a file's num_processes, with a warning naming
  // both. Unset: the file's count (1 without a file).
  std::optional<int> launcher_world;
  std::string launcher_world_source = "--num-processes";
  // The launcher's machine count (the job's resources.nodes, SLURM_NNODES): wins over the
  // file's num_machines, with a warning; the hybrid strategies shard within a machine.
  std::optional<int> launcher_machines;
  std::string launcher_machines_source = "resources.nodes";
  // Whether the job's accumulation and clipping were chosen (else a DeepSpeed file's own values
  // are not reported as overriding defaults nobody chose).
  bool accumulation_given = true;
  bool clipping_given = true;
  // Whether the job names its model (else it is the default preset, and a config's
  // fsdp_transformer_layer_cls_to_wrap of another architecture is not held against it:
  // `accelctl config validate` checks a file for any model).
  bool model_given = true;
  // The job's values are defaults standing in for a job nobody gave (`accelctl config
  // validate`): they fill "auto" but are never reported as overridden (JobSettings::stand_in).
  bool job_stand_in = false;
  std::optional<FloatType> load_dtype;  // weights loaded in bf16: FSDP's low precision
  std::optional<PrecisionMode> mixed_precision;  // a launcher's --mixed-precision
  DefaultProfile defaults = DefaultProfile::kLauncher;
  // Settings given on a command line win over the files: called after the plan is applied
  // with the options and the job's own; returns the names of what it kept from the job.
  std::function<std::vector<std::string>(TrainOptions& lowered, const TrainOptions& job)>
      job_wins;
  // Check the files the options name (the NVMe offload directory is writable). acceld and the
  // workers share a file system, so submit checks what the ranks will open.
  bool check_files = true;
};

struct LoweredJob {
  TrainOptions options;            // what every rank trains with
  int world_size = 1;              // ranks in the gang
  std::optional<TrainPlan> plan;   // the resolved plan, when a config was given
  std::string source;              // "fsdp.yaml", "ds.yaml + ds.json"; empty: no config
  std::vector<std::string> notes;  // resolver warnings and lowering notes, one line each
  model::ModelConfig model;         // the model the options name
};

[[nodiscard]] absl::StatusOr<LoweredJob> Lower(const LoweringInputs& inputs,
                                               Env* env = Env::Default());

// How many times this process called Lower: acceld once per submit, `accel-worker --standalone`
// once per rank, a daemon rank never (it trains its typed plan). Tests count with it.
int64_t LoweringsInProcess();

// The parts, exposed for their tests.

// The job's side of the resolution: every JobSettings field from `options`. hidden_size comes
// from the model preset or config.json; it stays unset when the model cannot be read.
JobSettings JobSettingsFromOptions(const TrainOptions& options, Env* env = Env::Default());

// Writes every field the plan decides into `options` (the rest — model, data, steps, seeds,
// checkpoint cadence — is the job's). Fields the plan leaves unset ("auto" the job did not
// fill) keep the value already in `options`. Settings that do not change the trained model but
// cannot be honoured (activation checkpointing, a wrap policy other than one unit per block,
// use_orig_params false, LOCAL_STATE_DICT, the scheduler's span) are appended to `notes`, one
// line each, naming the config key. Settings that would change the result or cannot run
// (SGD, Adam with L2 weight decay, fp16/bf16 master weights, an offload combination the engine
// does not have, NVMe offload without a path) are InvalidArgument, every problem on its own
// line, each naming the config key. `options` is unchanged on error.
[[nodiscard]] absl::Status ApplyTrainPlan(const TrainPlan& plan, TrainOptions* options,
                                          std::vector<std::string>* notes = nullptr);

}  // namespace accel::config
