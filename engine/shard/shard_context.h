// ShardContext: what every part of a sharded model shares (parallelize.h) — the layout and the
// plan, this rank's communicators, the memory the model computes in and the memory the
// optimizer's state lives in, host views of the groups, and the clock of time spent blocked in
// collectives. The parts hold a reference to it; it outlives them.
//
// Memory: ops() is the compute memory (host memory, or a CUDA device); optimizer_ops() is where
// offloaded state lives (host memory, or files for NVMe offload) and is ops() itself without
// offload; optimizer_storage() says how passes over that state run. param_ops() is where the
// kept parameter shards live: ops() without parameter offload, optimizer_ops() when they share
// the optimizer's storage (ParamsWithOptimizer), else host ops over a storage of their own
// (parameter offload alone, or to a directory apart from the optimizer's). Collectives on host values
// (the loss, the norm, broadcast weights) go through host_world() / host_shard(): the groups
// themselves when ops() is host memory, views that stage through device blocks otherwise
// (staged_communicator.h).
// Not thread-safe (one trainer thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/base/memory_ledger.h"
#include "engine/comm/communicator.h"
#include "engine/model/param_specs.h"
#include "engine/offload/storage.h"
#include "engine/shard/device_ops.h"
#include "engine/shard/shard_plan.h"

namespace accel::shard {

// The communicators of one rank. Non-hybrid: shard == world, replicate == nullptr. Hybrid:
// shard = this rank's group of hybrid_group_size consecutive ranks, replicate = the ranks with
// the same position in the other groups. Not owned.
struct ProcessGroups {
  comm::Communicator* world = nullptr;
  comm::Communicator* shard = nullptr;
  comm::Communicator* replicate = nullptr;
};

// The part of a unit the optimizer updates, relative to the unit: the whole padded unit when
// optimizer state is not sharded, else this rank's shard.
struct OptimizerSpan {
  int64_t begin = 0;   // first element, relative to the unit
  int64_t length = 0;  // elements, padding included
};

class ShardContext {
 public:
  // InvalidArgument when the communicators do not match the plan's sizes, or a dtype is not
  // fp32, bf16 or fp16. `ops` (not owned) is the compute memory; null: host memory charged to
  // `ledger`'s device pool (ledger null: MemoryLedger::Default()).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ShardContext>> Create(
      const model::ModelLayout* layout, ShardPlan plan, ProcessGroups groups,
      absl::Duration timeout, MemoryLedger* ledger, DeviceOps* ops);

  const model::ModelLayout& layout() const { return *layout_; }
  const ShardPlan& plan() const { return plan_; }
  const ShardOptions& options() const { return plan_.options(); }
  int num_units() const { return plan_.num_units(); }
  const UnitShard& unit(int u) const { return plan_.unit(u); }
  OptimizerSpan optimizer_span(int u) const;
  const ProcessGroups& groups() const { return groups_; }
  comm::Communicator& shard_group() const { return *groups_.shard; }
  absl::Duration timeout() const { return timeout_; }
  MemoryLedger* ledger() const { return ledger_; }

  DeviceOps& ops() const { return *ops_; }
  DeviceOps& optimizer_ops() const { return *optimizer_ops_; }
  bool optimizer_offloaded() const { return optimizer_ops_ != ops_; }
  // How passes over the optimizer's state run (offload::Storage's behaviour methods): the
  // storage ApplyOffload chose, or offload::InPlace() while the state is in compute memory.
  const offload::Storage& optimizer_storage() const { return *optimizer_storage_; }
  // Moves the optimizer's state to `storage` (ApplyOffload: host memory or files), through host
  // ops over it (CreateOffloadDeviceOps); the context owns both from then on.
  void SetOptimizerStorage(std::unique_ptr<offload::Storage> storage);
  // Where the kept parameter shards live (see the file comment).
  DeviceOps& param_ops() const { return *param_ops_; }
  bool params_offloaded() const { return param_ops_ != ops_; }
  // Whether the parameter shards have a storage of their own (SetParamStorage), apart from
  // the optimizer's: their blocks are evicted on their own (EvictRange through param_ops()).
  bool params_apart() const { return owned_param_ops_ != nullptr; }
  // Moves the kept parameter shards to `storage` (ApplyOffload, when they do not share the
  // optimizer's), through host ops over it; the context owns both from then on. Without
  // this call they follow the optimizer's state under offload_params, else stay in ops().
  void SetParamStorage(std::unique_ptr<offload::Storage> storage);
  comm::Communicator* host_world() const { return host_world_; }
  comm::Communicator* host_shard() const { return host_shard_; }

  // Later block work sees the collective's results (a host wait on host memory); the time the
  // host spends blocked counts as exposed communication.
  [[nodiscard]] absl::Status Await(comm::Communicator& comm,
                                   const std::shared_ptr<comm::Work>& work);
  // The results on the host too: Await, then the Work's own Status.
  [[nodiscard]] absl::Status AwaitOnHost(comm::Communicator& comm,
                                         const std::shared_ptr<comm::Work>& work);
  // A collective on host memory through a host view, its time counted as exposed communication.
  [[nodiscard]] absl::Status OnHost(
      const std::function<std::shared_ptr<comm::Work>()>& collective);
  // Every rank's `value` in rank order, through an f32 all-gather of its bits on a host view.
  [[nodiscard]] absl::StatusOr<std::vector<double>> AllGatherDouble(
      comm::Communicator& host_comm, double value);
  // Seconds blocked in collectives since the last call: the host's waits, plus on a device the
  // compute stream's (DeviceOps::TakeStreamWaitSeconds; call after the ops are synchronised).
  double TakeCommWaitSeconds();

 private:
  ShardContext(const model::ModelLayout* layout, ShardPlan plan, ProcessGroups groups,
               absl::Duration timeout, MemoryLedger* ledger)
      : layout_(layout), plan_(std::move(plan)), groups_(groups), timeout_(timeout),
        ledger_(ledger) {}

  const model::ModelLayout* layout_;
  ShardPlan plan_;
  ProcessGroups groups_;
  absl::Duration timeout_;
  MemoryLedger* ledger_;
  std::unique_ptr<DeviceOps> owned_ops_;            // the host ops when Create got none
  std::unique_ptr<DeviceOps> owned_optimizer_ops_;  // offloaded state's ops
  std::unique_ptr<DeviceOps> owned_param_ops_;      // offloaded parameters' own ops
  DeviceOps* ops_ = nullptr;
  DeviceOps* optimizer_ops_ = nullptr;
  DeviceOps* param_ops_ = nullptr;
  const offload::Storage* optimizer_storage_ = &offload::InPlace();
  std::unique_ptr<comm::Communicator> staged_world_, staged_shard_;
  comm::Communicator* host_world_ = nullptr;
  comm::Communicator* host_shard_ = nullptr;
  double comm_wait_seconds_ = 0;
};

}  // namespace accel::shard
