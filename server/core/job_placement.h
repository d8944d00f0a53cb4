// Placement: where a job's ranks go. acceld's own slot pools (CPU slots, one slot per GPU; the
// Scheduler decides which job runs next and on which slots) for the local launcher, or a
// cluster's scheduler (slurm, kubernetes) for the launchers that place ranks on other machines.
// Decides only: no I/O, no state store. Not thread-safe: JobManager guards it with its state
// mutex (job_manager.h, "Locks"); the launchers are added before acceld starts and not after.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/core/gang_runner.h"
#include "server/core/gpus.h"
#include "server/core/scheduler.h"
#include "server/core/types.h"

namespace accel::server {

struct PoolView {
  std::string device;  // "cpu" | "cuda"
  int total_slots = 0;
  int free_slots = 0;
  std::vector<std::string> names;     // cuda: one per slot
  std::vector<int64_t> memory_bytes;  // cuda: one per slot (0: unknown)
};

// The CPU pool in the top-level fields (as before GPUs), every pool in `pools`.
struct ClusterView {
  std::string device;
  int total_slots = 0;
  int free_slots = 0;
  std::map<std::string, std::vector<int>> allocations;  // every pool's, by job id
  std::map<std::string, std::string> allocation_device;  // job id -> its pool's device
  std::vector<std::string> queue;                        // the CPU queue, then the cuda one
  std::vector<PoolView> pools;
};

class Placement {
 public:
  // `cpu_device` names the CPU pool in views; `local` is the "local" launcher (not owned).
  Placement(int cpu_slots, std::string cpu_device, std::vector<GpuDevice> gpus, GangRunner* local);

  // Adds a launcher that places ranks on other machines; does not own it.
  void AddLauncher(const std::string& name, GangRunner* runner) { launchers_[name] = runner; }
  const std::map<std::string, GangRunner*>& launchers() const { return launchers_; }
  // The job's launcher, or null when this acceld has none of that name.
  GangRunner* RunnerFor(const JobRecord& job) const;
  // Whether the job's ranks go to a cluster (slurm, kubernetes) rather than acceld's pools.
  static bool IsRemote(const JobRecord& job) { return job.knobs.launcher != "local"; }

  // Submit's door: InvalidArgument naming resources.launcher, resources.device or
  // resources.num_processes when the job could never be placed here.
  [[nodiscard]] absl::Status CheckFits(const JobRecord& job) const;
  // Queues the job where its launcher takes it: a slot pool, or the remote list that the next
  // Ready() hands out (the cluster queues it). FailedPrecondition naming the pool or launcher.
  [[nodiscard]] absl::Status Enqueue(const JobRecord& job);
  // Takes the job out of every pool's queue and frees its slots.
  void Unschedule(const std::string& job_id);
  // The jobs to start now: remote ones first, then what each pool admits (slots allocated).
  std::vector<std::string> Ready();
  // A cuda gang's rank r runs on the GPU of its r-th slot: the CUDA_VISIBLE_DEVICES value per
  // rank ("" for CPU jobs).
  std::vector<std::string> CudaDevices(const JobRecord& job) const;
  ClusterView View() const;

 private:
  // The pool of a device kind: the CPU scheduler, the GPU one, or null (no such pool).
  Scheduler* Pool(DeviceKind device);
  const Scheduler* Pool(DeviceKind device) const;

  const std::string cpu_device_;
  const std::vector<GpuDevice> gpus_;
  Scheduler cpu_;  // CPU slots
  Scheduler gpu_;  // one slot per gpus_ entry
  std::vector<std::string> remote_ready_;  // remote jobs to start next
  std::map<std::string, GangRunner*> launchers_;  // by name, "local" included
};

// "resources.launcher: this acceld has no X launcher (...)".
std::string NoLauncher(const JobRecord& job);

}  // namespace accel::server
