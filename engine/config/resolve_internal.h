// Shared state of one resolution, for resolve*.cc only.
#pragma once

#include <optional>
#include <string>

#include "engine/config/accelerate_yaml.h"
#include "engine/config/deepspeed_json.h"
#include "engine/config/inputs.h"
#include "engine/config/values.h"

namespace accel::config::internal {

class Context {
 public:
  Context(const ConfigInputs& inputs, const Document& yaml_doc, const AccelerateConfig& yaml,
          Diagnostics* diag)
      : inputs(inputs),
        yaml_doc(yaml_doc),
        yaml(yaml),
        diag(diag),
        env_doc_(EnvironmentDocument(inputs.env)),
        env(env_doc_, diag),
        yaml_reader(yaml_doc, diag),
        job_(inputs.job) {}

  bool launcher_defaults() const { return inputs.defaults == DefaultProfile::kLauncher; }
  // The job's settings after ValidateJob (out-of-range values reported and dropped).
  const JobSettings& job() const { return job_; }
  JobSettings& mutable_job() { return job_; }

  // Errors and warnings about a YAML key (with its line) or an environment variable.
  void YamlError(const KeyPath& path, std::string_view message) {
    diag->Error(yaml_doc, path, message);
  }
  void YamlWarn(const KeyPath& path, std::string_view message) {
    diag->Warn(yaml_doc, path, message);
  }
  // A job value the plan needs is missing: an error when the job is complete, else the field
  // is listed in one warning (FlushPending) as waiting for the job.
  void MissingJobValue(std::string_view source, std::string_view path, std::string_view what);
  void FlushPending();

  const ConfigInputs& inputs;
  const Document& yaml_doc;
  const AccelerateConfig& yaml;
  Diagnostics* diag;

 private:
  Document env_doc_;
  std::vector<std::string> pending_;

 public:
  Reader env;          // reads ConfigInputs::env
  Reader yaml_reader;  // for re-reading YAML keys with their marks
  TrainPlan plan;

 private:
  JobSettings job_;
};

// Reports job values out of range (as errors under source "job") and drops them.
void ValidateJob(Context& c);

// resolve.cc: what every distributed type shares.
void ResolveProcesses(Context& c);
// The mixed-precision mode asked for outside a DeepSpeed JSON: command line > YAML > env.
PrecisionMode RequestedPrecision(Context& c, bool include_yaml);
// Fills plan.mixed_precision dtypes (and loss scaling for FSDP/DDP fp16) from plan mode.
void ResolveTorchPrecision(Context& c);

// resolve_fsdp.cc
void ResolveFsdp(Context& c);
void ResolveDdp(Context& c);

// resolve_deepspeed.cc
// json == nullptr: plugin mode.
void ResolveDeepSpeed(Context& c, const DeepSpeedJson* json);

// resolve_training.cc: accumulation, clipping, batch sizes, optimizer, scheduler.
struct BatchKeys {
  Autoable<int64_t> micro;        // train_micro_batch_size_per_gpu
  Autoable<int64_t> total;        // train_batch_size
  std::string source;             // where the keys came from, for messages
};
void ResolveBatch(Context& c, const BatchKeys& keys);
// FSDP and DDP: accumulation (ACCELERATE_GRADIENT_ACCUMULATION_STEPS > job > 1) and clipping
// (job > 1.0), then the batch sizes from the job.
void ResolveTorchTraining(Context& c);
void ResolveOptimizer(Context& c, const DeepSpeedJson& json);

}  // namespace accel::config::internal
