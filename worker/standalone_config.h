// `accel-worker --standalone [--config accelerate.yaml] [--deepspeed-config ds.json]`: the run's
// flags and files through the one lowering (engine/config/lower.h), with this process's FSDP_* /
// ACCELERATE_* variables as Accelerate's plugins read them. The launcher's count (--world-size,
// WORLD_SIZE, or this one process) wins over the file's num_processes, with a warning.
//
// Precedence, per setting: a flag given on the command line > the config files (their own
// precedence: docs/config.md §2) > the flag's default. The job's values — micro batch, lr,
// betas, eps, weight decay, warmup, steps, and accumulation / clipping when their flags were
// given — fill the config's "auto" fields. A DeepSpeed JSON alone (no --config) is resolved
// under an implied `distributed_type: DEEPSPEED` YAML with num_processes = the world size.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "worker/launch_env.h"
#include "worker/standalone.h"

namespace accel::worker {

struct StandaloneConfig {
  std::string source;              // "fsdp.yaml", "fsdp.yaml + ds.json", or "" (no config)
  std::vector<std::string> notes;  // resolver warnings, mapping notes, flag overrides
  model::ModelConfig model;        // the model the lowering read: the run's typed plan carries it
};

// Lowers f->train with --config / --deepspeed-config (the flags alone without them) and
// replaces it with what every rank runs. world_source names where `world` came from
// ("--world-size", "WORLD_SIZE"). `machines`: the launcher's node count when the gang spans
// several (the lowering then groups a hybrid plan by node), with what said it. InvalidArgument /
// NotFound from the lowering, naming the file and key or the flag.
struct LauncherMachines {
  int count = 0;       // 0: the launcher says nothing about machines
  std::string source;  // "SLURM_NNODES", "torchrun --nnodes", ...
};
[[nodiscard]] absl::StatusOr<StandaloneConfig> ApplyStandaloneConfig(
    StandaloneFlags* f, int world, std::string_view world_source, LauncherMachines machines = {},
    Env* env = Env::Default());

// The multi-node keys of the Accelerate YAML at `path` (num_processes, num_machines,
// machine_rank, main_process_ip, main_process_port, rdzv_backend), read before the lowering
// because they decide the world it runs on. nullopt when the file cannot be read or parsed:
// the lowering reports that, naming the file and key.
std::optional<MultiNodeKeys> PeekMultiNodeKeys(const std::string& path, Env* env = Env::Default());

// Prints the resolved mode (engine/config/mode.h DescribeMode) and the notes: text lines on
// stdout, or one {"event":"mode",...} JSON line when json.
void PrintResolvedMode(const train::TrainOptions& options, const StandaloneConfig& config,
                       bool json);

}  // namespace accel::worker
