// Refusal before OOM (DESIGN.md §3.3): before a rank allocates anything, its memory plan
// (engine/plan/memory_plan.h) for the ranks on this machine is compared with what the machine
// has — the memory cgroup's limit when one applies (v1 memory.limit_in_bytes, v2 memory.max),
// else MemAvailable — and a plan that cannot fit ends the rank at once with one line: the pool,
// the bytes needed and available, where the limit came from, and which of activation
// checkpointing, NVMe offload, full_shard, more machines or a smaller micro-batch would make it
// fit (each one planned, not guessed).
//
// The margin keeps jobs that fit running: what is compared is the plan's bytes (every buffer
// the engine charges, all of them touched: a lower bound of what the ranks will hold) plus what
// the process already holds of its own (RssAnon; every local rank counted alike), against the
// whole limit (or MemAvailable, which already leaves out what the process holds). A refused job
// could not have fit; one that passes close to the limit may still need the few tens of MB the
// plan does not count (the data file's pages, thread stacks, communication buffers, allocator
// slack). A suggested change, on the other hand, must fit with 64 MiB to spare for those, so
// that following the advice does not end in the OOM killer.
//
// What is compared is RAM: on a CPU rank its compute and host pools, on a GPU rank
// the host pool only (the GPU's own memory is the CUDA allocator's business). NVMe-offloaded
// state lives in files and is not counted.
#pragma once

#include "absl/status/status.h"
#include "engine/base/process_memory.h"
#include "engine/config/train_options.h"

namespace accel::worker {

struct MemoryCheckInput {
  const config::TrainOptions* options = nullptr;
  int world = 1;
  int rank = 0;
  int local_ranks = 1;  // ranks of this job on this machine (LOCAL_WORLD_SIZE; 1 when unset)
  bool on_gpu = false;
};

// OK when the plan fits, or options->ignore_memory_plan. FailedPrecondition with the one-line
// refusal otherwise; the model's errors (a bad preset or config.json) as they are. Options from
// a typed plan (options->resolved_model set) are planned with that model, neither re-read nor
// re-validated; others are validated first (ValidateTrainOptions) and their model is read.
[[nodiscard]] absl::Status CheckMemoryPlan(const MemoryCheckInput& input,
                                           const ProcessMemory& machine);

}  // namespace accel::worker
