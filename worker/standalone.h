// `accel-worker --standalone`: trains in this one process, printing progress to the terminal
// (or JSON lines with --output json) and optionally writing metrics and the final weights.
#pragma once

#include <set>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "accel/v1/job.pb.h"
#include "engine/train/trainer.h"
#include "job/settings.h"

namespace accel::worker {

struct StandaloneFlags {
  train::TrainOptions train;
  std::string schedule = "cosine";
  int threads = 0;  // 0 = all cores
  // The job keys given as flags (job/settings_flags.h), with the table's defaults: the
  // standalone reads train.log_every from here; the others are applied to `train` as parsed.
  accel::v1::JobSpec spec = job::DefaultJobSpec();
  std::string metrics_out;
  std::string save_final;
  std::string save_dtype = "f32";
  std::string mixed_precision = "no";  // no | bf16 | fp16 (Accelerate's --mixed_precision)
  // fp32 | bf16: the dtype the weights are loaded in (from_pretrained's torch_dtype). bf16
  // without mixed precision trains in FSDP's low precision (no fp32 master).
  std::string load_dtype = "fp32";
  std::string output = "text";  // text | json
  std::string device = "cpu";   // cpu | cuda (a GPU per rank: worker/device_session.h)
  int64_t shuffle = -1;         // < 0: no shuffling
  // Data-parallel gang (torchrun's RANK / WORLD_SIZE when the flags are not given).
  int rank = -1;
  int world_size = -1;
  std::string rdzv_dir;         // FileStore rendezvous directory (shared file system)
  std::string run_id = "default";
  double comm_timeout_s = 120;
  std::string strategy = "no_shard";
  std::string backward_prefetch = "backward_pre";
  // Accelerate YAML and DeepSpeed JSON (worker/standalone_config.h): the plan they resolve to
  // replaces the defaults; flags given on the command line still win.
  std::string config;
  std::string deepspeed_config;
  // Long names ("--strategy") of the flags given on the command line, filled after parsing.
  std::set<std::string> given;
};

// Registers the standalone flags on `app`, writing into `flags`.
void AddStandaloneFlags(CLI::App& app, StandaloneFlags& flags);

// Runs training; returns the first error (already formatted to name what is wrong).
[[nodiscard]] absl::Status RunStandalone(StandaloneFlags flags);

// "step  3/20 | loss 5.1234 | lr 3.00e-04 | grad norm 1.234 | 2500 tok/s | 80 ms/step | ETA 0:02"
std::string FormatProgress(const train::StepMetrics& m);

}  // namespace accel::worker
