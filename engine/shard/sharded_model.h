// ShardedModel: applies a ShardPlan — it owns this rank's parameters and gradients, hands the
// model full parameters unit by unit (ParamAccess), gathers and frees them, prefetches, and
// reduces gradients, so that the trainer never branches on the strategy.
//
// A training step, as the trainer drives it:
//   ZeroGrads()
//   for each micro-step m of accum:  BeginMicroStep(m, accum); model Forward/Backward through
//                                    *this; EndMicroStep(m, accum)
//   GradNormSquared()                 (global, collective)
//   optimizer over OwnedRanges()      (AdamW per range; elementwise, so no communication)
//   FinishStep()                      (all-gather updated shards where params stay full)
// Every rank must make the same calls in the same order; all collectives have the groups'
// deadlines, and a failure is returned as the communicator's Status (Unavailable /
// DeadlineExceeded), never a hang.
//
// Reduced gradients are the mean over data-parallel ranks: each rank's backward runs with
// dloss = loss_scale / (accum · world) (GradScale()) and the reductions sum.
//
// Mixed precision (plan.options().param_dtype / reduce_dtype not f32, DESIGN.md §3.2): the
// resident parameters are in param_dtype and travel in it; the model gets an fp32 copy of each
// unit while it is in use (exactly the low-precision values) and, in bf16, the gathered bf16
// parameters too, which its matmuls use directly where the CPU multiplies bf16 natively;
// gradients are reduced in reduce_dtype (fp32 accumulation inside the collective) and kept in
// it between micro-steps; the optimizer updates fp32 master copies of the owned ranges on
// fp32, unscaled gradients (OwnedRanges), and FinishStep rounds the masters back to
// param_dtype and re-gathers where parameters stay full.
// Buffers are charged to the ledger in the device pool: params (the param_dtype copies),
// grads (reduced gradients), optimizer state (fp32 masters; AdamW adds its moments), and
// transient buffers to their category while in use, to "other" while cached.
//
// Where the buffers live is the DeviceOps' business (device_ops.h): host memory by default,
// or a CUDA device (engine/shard/cuda/cuda_device_ops.h), in which case every pointer this
// class hands out (Params, ParamsBf16, Grads) is device memory, the model must queue its work
// on the ops' compute stream, and collectives are ordered against that stream by events rather
// than host waits. The host-pointer arguments of LoadFull, LoadUnitRange, LoadUnit, GatherUnit,
// GatherFull and BroadcastFull stay host memory either way.
//
// Offload (ShardOptions::offload_optimizer / offload_params, docs/sharding.md): the fp32
// masters, the optimizer's gradient copies and, with parameter offload, the resident parameter
// shards live in a second, host DeviceOps (optimizer_ops(), the ledger's host pool); OwnedRanges
// and ParamViews then point there, the reduced gradients are copied to it before the update and
// the masters come back from it after. Without offload optimizer_ops() is ops().
// Not thread-safe (one trainer thread); communication runs on the communicators' threads.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/base/memory_ledger.h"
#include "engine/comm/communicator.h"
#include "engine/model/param_access.h"
#include "engine/shard/device_ops.h"
#include "engine/shard/shard_plan.h"
#include "engine/shard/staged_communicator.h"

namespace accel::shard {

// The communicators of one rank. Non-hybrid: shard == world, replicate == nullptr. Hybrid:
// shard = this rank's group of hybrid_group_size consecutive ranks, replicate = the ranks with
// the same position in the other groups. Not owned.
struct ProcessGroups {
  comm::Communicator* world = nullptr;
  comm::Communicator* shard = nullptr;
  comm::Communicator* replicate = nullptr;
};

// A range of the flat layout this rank updates: [flat_begin, flat_end), with its parameters and
// reduced gradients (flat_end - flat_begin elements each). The parameters are fp32 `params`
// (the model's, or the fp32 masters), or under low precision (ShardOptions::master_dtype bf16)
// the bf16 parameters themselves in `params16`, with `params` null.
struct OwnedRange {
  int unit;
  int64_t flat_begin, flat_end;
  float* params;
  const float* grads;
  uint16_t* params16 = nullptr;
};

// use_orig_params: one named parameter as a view into this rank's flat storage. The view covers
// the parameter's row-major elements [begin, end) that this rank updates (all of them when
// the optimizer state is not sharded, else the part inside its shard; possibly none), and
// points at the values the optimizer updates (the parameters, or the fp32 masters under
// mixed precision; the bf16 parameters, `data16`, under low precision). Writes through the view
// change the model after the next FinishStep.
struct ParamView {
  const LayoutEntry* entry = nullptr;  // name, full shape, offset, numel
  int64_t begin = 0, end = 0;
  float* data = nullptr;  // end - begin floats; nullptr when the range is empty
  uint16_t* data16 = nullptr;  // low precision: end - begin bf16 values instead of `data`
};

class ShardedModel final : public model::ParamAccess {
 public:
  // `ops` (not owned; must outlive the model) says where the buffers live; null: host memory
  // charged to `ledger`'s device pool.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ShardedModel>> Create(
      const model::Gpt2Layout* layout, ShardPlan plan, ProcessGroups groups,
      absl::Duration timeout, MemoryLedger* ledger = nullptr, DeviceOps* ops = nullptr);
  ~ShardedModel() override;

  const ShardPlan& plan() const { return plan_; }
  // Where this model's buffers live (the ops Create got, or its own host ops); the trainer
  // computes through the same ones.
  DeviceOps& ops() const { return *ops_; }
  // Where the optimizer's state lives and its update runs: ops(), or under offload_optimizer
  // host ops of the ledger's host pool. OwnedRanges' params and grads are this memory.
  DeviceOps& optimizer_ops() const { return *optimizer_ops_; }
  // The world communicator for host-memory values: the world itself, or on a device a view
  // that stages them through device memory (staged_communicator.h). For the trainer's own
  // agreements too (checkpoint outcomes, rank statistics, loading broadcasts).
  comm::Communicator* host_world() const { return host_world_; }
  bool offload_optimizer() const { return plan_.options().offload_optimizer; }
  // NVMe offload: writes the offloaded state back to its files and drops it from memory (after
  // loading; FinishStep does it after every update). Nothing otherwise.
  [[nodiscard]] absl::Status EvictOffloaded() {
    return optimizer_ops_ == ops_ ? absl::OkStatus() : optimizer_ops_->Evict();
  }
  // Whether parameters or gradients are kept in a 16-bit dtype.
  bool mixed_precision() const { return mixed_; }
  // Low precision: bf16 parameters without fp32 masters (ShardOptions::master_dtype bf16).
  bool low_precision() const { return low_precision_; }
  // The dtypes of every buffer class, for logs and memory records:
  // {"params":"bf16","grads":"bf16","master":"fp32","optimizer":"fp32"}.
  std::string DTypesJson() const;
  // fp16 loss scaling: gradients are produced multiplied by `scale` and divided by it before
  // the optimizer sees them. 1 by default.
  void set_loss_scale(double scale) { loss_scale_ = scale; }
  // Seconds spent blocked in collectives since the last call (exposed communication): the host's
  // waits, plus on a device the compute stream's (DeviceOps::TakeStreamWaitSeconds; call after
  // the ops are synchronised).
  double TakeCommWaitSeconds() {
    const double s = comm_wait_seconds_ + ops_->TakeStreamWaitSeconds();
    comm_wait_seconds_ = 0;
    return s;
  }
  // The backward's dloss for one micro-step of `accum`: loss_scale / (accum · world).
  float GradScale(int accum) const;

  // Takes this rank's pieces of a full parameter vector (layout order, num_params floats); every
  // rank must pass the same values (same seed, same file, or after BroadcastFull).
  [[nodiscard]] absl::Status LoadFull(const float* full);
  // The part of unit u, relative to the unit, whose values this rank keeps: [0, numel) when
  // parameters persist, else the real part of its shard. Empty for an all-padding shard.
  std::pair<int64_t, int64_t> HeldRange(int u) const;
  // Sets this rank's copy of unit u from `values`, which hold exactly HeldRange(u)'s elements
  // (fp32; the master copy under mixed precision, rounded into the low-precision one). Local.
  [[nodiscard]] absl::Status LoadUnitRange(int u, const float* values);
  // Same from the whole unit's numel values.
  [[nodiscard]] absl::Status LoadUnit(int u, const float* unit_values);
  // Unit u's full fp32 parameters (the master values under mixed precision) into `out` (numel
  // floats) on every rank; memory beyond `out` is bounded by the unit. Collective over the
  // shard group (and, for hybrid strategies, every rank must call it too).
  [[nodiscard]] absl::Status GatherUnit(int u, float* out);
  // Rank `root`'s full vector to every rank (sync_module_states). In place.
  [[nodiscard]] absl::Status BroadcastFull(float* full, int root);
  // Gathers the full parameters (layout order) into `out` on every rank.
  [[nodiscard]] absl::Status GatherFull(float* out);

  [[nodiscard]] absl::Status ZeroGrads();
  // Before micro-step m's forward: whether its gradients are reduced as backward produces them
  // (the last micro-step, or every one with reduce_every_micro_step).
  void BeginMicroStep(int micro, int accum);
  // After micro-step m's backward: completes or issues the gradient reductions due now.
  [[nodiscard]] absl::Status EndMicroStep(int micro, int accum);
  // Σ g² over every element of the reduced gradient, counted once: each rank sums its shard
  // partition, the partials are all-gathered and added in rank order, so every rank (and every
  // non-hybrid strategy at one world size) gets the same bits.
  [[nodiscard]] absl::StatusOr<double> GradNormSquared();
  // The mean of `value` over all ranks, summed in rank order (loss agreement).
  [[nodiscard]] absl::StatusOr<double> MeanOverRanks(double value);
  std::vector<OwnedRange> OwnedRanges();
  // Every parameter of the layout, in layout order (param_views.cc). Valid until the next
  // Allocate-level change (the storage is fixed for the model's lifetime).
  std::vector<ParamView> ParamViews();
  [[nodiscard]] absl::Status FinishStep();

  // ParamAccess, called by the model.
  absl::StatusOr<const float*> Params(int unit, model::Pass pass) override;
  absl::Status Release(int unit, model::Pass pass) override;
  // The gathered bf16 parameters themselves under bf16 mixed precision (null otherwise).
  const uint16_t* ParamsBf16(int unit) override;
  // For a model that reads some ranges of a unit only through ParamsBf16 (its matmul weights,
  // model::Gpt2::MatmulWeightRanges): the fp32 copy Params() returns leaves those ranges
  // unconverted, so their values there are unspecified. `ranges[u]` lists [offset, offset +
  // numel) within unit u, sorted and disjoint. Saves a conversion of nearly every parameter
  // twice a step. Ignored unless the parameters are bf16.
  void SkipFp32Copy(std::vector<std::vector<std::pair<int64_t, int64_t>>> ranges) {
    skip_fp32_ = std::move(ranges);
  }
  absl::StatusOr<float*> Grads(int unit) override;
  absl::Status GradsReady(int unit) override;

 private:
  struct Unit {
    // Parameters, in param_dtype.
    DeviceBlock full;    // padded_numel: resident (persistent strategies) or while gathered
    DeviceBlock shard;   // shard_numel: sharded params (full shard only)
    // fp32 local gradients while they accumulate unreduced (padded_numel). Resident and also
    // the reduced result for fp32 no_shard / zero1; from the pool otherwise.
    DeviceBlock full_grads;
    // Reduced gradients: fp32 shard_numel for per-unit reducing strategies; under mixed
    // precision in reduce_dtype, padded_numel (no_shard, zero1) or shard_numel (the others).
    DeviceBlock reduced;
    // With masters (masters_, in the optimizer's memory):
    DeviceBlock master;     // fp32 master of the optimizer range: MasterBegin(), MasterLength()
    DeviceBlock opt_grads;  // fp32 unscaled gradients of the optimizer range, during the update
    // Mixed precision only.
    DeviceBlock compute;    // fp32 copy of `full` while the model uses it
    DeviceBlock comm;       // reduce_dtype copy of full_grads while it is reduce-scattered
    std::shared_ptr<comm::Work> gather;  // in-flight all-gather into `full`
    bool gathered = false;
    bool keep_for_step = false;  // persistent small unit, or the root during a step
    bool keep_for_reuse = false;  // needed again within max_reuse_distance: not freed
  };
  struct PendingReduce {
    int unit;
    std::shared_ptr<comm::Work> work;
    bool accumulate;  // add into `reduced` (else the reduction wrote it directly)
  };

  ShardedModel(const model::Gpt2Layout* layout, ShardPlan plan, ProcessGroups groups,
               absl::Duration timeout, MemoryLedger* ledger)
      : layout_(layout), plan_(std::move(plan)), groups_(groups), timeout_(timeout),
        ledger_(ledger) {}
  absl::Status Allocate();
  size_t param_size() const { return DTypeSize(plan_.options().param_dtype); }
  size_t reduce_size() const { return DTypeSize(plan_.options().reduce_dtype); }
  // The optimizer range of unit u relative to the unit: the whole padded unit under no_shard,
  // else this rank's shard.
  int64_t MasterBegin(int u) const;
  int64_t MasterLength(int u) const;
  absl::Status PrepareOptimizerGrads();
  // Whether the optimizer reads fp32 copies of the reduced gradients (opt_grads): under mixed
  // or low precision, and whenever it is offloaded.
  bool OptimizerReadsCopies() const { return mixed_ || masters_; }
  void ReleaseCompute(int unit);
  int64_t LiveGatheredNumel(int except) const;
  absl::Status PrefetchForward(int unit);
  absl::Status PrefetchBackward(int unit);
  absl::Status PrefetchBucket(int unit, int (ShardedModel::*next)(int) const);
  int NextInForward(int unit) const;
  int64_t InFlightGatherNumel() const;
  int64_t ReuseDistanceAfterForward(int unit) const;
  // Later block work sees the collective's results (a host wait on host memory); the time the
  // host spends blocked counts as exposed communication.
  absl::Status Await(comm::Communicator& comm, const std::shared_ptr<comm::Work>& work);
  // The collective's results on the host too: Await, then the Work's own Status.
  absl::Status AwaitOnHost(comm::Communicator& comm, const std::shared_ptr<comm::Work>& work);
  // A collective on host memory through a host view (host_world_, host_shard_), its time
  // counted as exposed communication (a staged view completes within the call).
  absl::Status OnHost(const std::function<std::shared_ptr<comm::Work>()>& collective);
  // Every rank's `value` (a host double) in rank order, through an f32 all-gather of the bits
  // on a host view.
  absl::StatusOr<std::vector<double>> AllGatherDouble(comm::Communicator& host_comm,
                                                      double value);
  // n values of `dtype` at block memory `src` into host floats `out`.
  absl::Status ConvertToHost(const void* src, DType dtype, float* out, int64_t n);
  // Zeroes a block through the ops that made it (the model's, or the optimizer's when offloaded).
  static absl::Status ZeroBlock(DeviceBlock& block) {
    return block.empty() ? absl::OkStatus() : block.ops()->Zero(block.data(), block.bytes());
  }
  // Moves bytes between the model's memory and the optimizer's (the same ops: a copy).
  absl::Status ToOptimizer(void* optimizer_dst, const void* model_src, size_t bytes);
  absl::Status FromOptimizer(void* model_dst, const void* optimizer_src, size_t bytes);
  absl::Status IssueGather(int unit);
  absl::Status EnsureGathered(int unit);
  void MaybeFree(int unit);
  absl::Status Prefetch(int unit);
  int NextInBackward(int unit) const;
  absl::Status CompleteReduce(const PendingReduce& p);
  absl::Status DrainReduces(size_t keep);
  absl::Status ReduceUnitNow(int unit);

  const model::Gpt2Layout* layout_;
  ShardPlan plan_;
  ProcessGroups groups_;
  absl::Duration timeout_;
  MemoryLedger* ledger_;
  std::unique_ptr<DeviceOps> owned_ops_;  // the host ops when Create got none; outlives units_
  std::unique_ptr<DeviceOps> owned_optimizer_ops_;  // offload_optimizer's host ops; likewise
  // Gathered parameters and unit gradients come and go every step: ops_ caches their memory.
  DeviceOps* ops_ = nullptr;
  std::vector<Unit> units_;
  std::deque<PendingReduce> pending_reduces_;
  bool mixed_ = false;
  bool low_precision_ = false;  // mixed_ without masters
  // The optimizer updates fp32 masters apart from the parameters: mixed precision (not low),
  // or offload_optimizer.
  bool masters_ = false;
  DeviceOps* optimizer_ops_ = nullptr;
  // Host views of the world and shard groups (the groups on host memory; staged otherwise).
  std::unique_ptr<comm::Communicator> staged_world_, staged_shard_;
  comm::Communicator* host_world_ = nullptr;
  comm::Communicator* host_shard_ = nullptr;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> skip_fp32_;  // SkipFp32Copy
  double loss_scale_ = 1;
  double comm_wait_seconds_ = 0;
  bool reducing_micro_step_ = true;  // whether this micro-step's gradients are reduced now
  bool accumulate_reduced_ = false;  // whether reduced shards add to earlier micro-steps'
};

}  // namespace accel::shard
