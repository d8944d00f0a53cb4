// ShardedModel: one rank's model under a ShardPlan, as the trainer and the model see it — the
// ParamAccess the model reaches its parameters and gradients through, unit by unit, and the
// step API the trainer drives, so that neither branches on the strategy. It is a facade over
// the parts Parallelize() composes (parallelize.h): where parameters live (ParamStore), what
// the model computes on (Precision), when gradients are reduced (GradReducer), and what the
// optimizer updates (OptimizerValues), over one ShardContext (memory, communicators).
//
// A training step, as the trainer drives it:
//   ZeroGrads()
//   for each micro-step m of accum:  BeginMicroStep(m, accum); model Forward/Backward through
//                                    *this; EndMicroStep(m, accum)
//   GradNormSquared()                 (global, collective)
//   optimizer over OwnedRanges()      (AdamW per range; elementwise, so no communication),
//                                      RangeUpdated(range) after each
//   FinishStep()                      (updated values back into the parameters, re-gathered
//                                      where parameters stay full)
// Every rank must make the same calls in the same order; all collectives have the groups'
// deadlines, and a failure is returned as the communicator's Status (Unavailable /
// DeadlineExceeded), never a hang.
//
// Reduced gradients are the mean over data-parallel ranks: each rank's backward runs with
// dloss = loss_scale / (accum · world) (GradScale()) and the reductions sum.
//
// Mixed precision (DESIGN.md §3.2, docs/sharding.md): parameters are kept and travel in
// param_dtype, the model gets fp32 copies (and bf16 ones), gradients are reduced in
// reduce_dtype, and the optimizer updates fp32 masters; low precision updates the bf16
// parameters themselves. Buffers are charged to the ledger in the device pool: params, grads,
// optimizer state (masters; AdamW adds its moments), and transient buffers to their category
// while in use, to "other" while cached.
//
// Where the buffers live is the DeviceOps' business (device_ops.h): host memory by default,
// or a CUDA device (engine/shard/cuda/cuda_device_ops.h), in which case every pointer this
// class hands out (Params, ParamsBf16, Grads) is device memory, the model must queue its work
// on the ops' compute stream, and collectives are ordered against that stream by events rather
// than host waits. The host-pointer arguments of LoadFull, LoadUnitRange, LoadUnit, GatherUnit,
// GatherFull and BroadcastFull stay host memory either way.
//
// Offload (ShardOptions::offload_optimizer / offload_params / offload_dir /
// offload_param_dir): the fp32 masters and the optimizer's gradient copies live in
// optimizer_ops() (host memory or files; the ledger's host or nvme pool), and with parameter
// offload the kept parameter shards in ShardContext::param_ops() (the same memory, or a
// storage of their own: parameter offload alone, or another directory); OwnedRanges and
// ParamViews then point there. Without offload both are ops().
// Not thread-safe (one trainer thread); communication runs on the communicators' threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/base/memory_ledger.h"
#include "engine/base/status_macros.h"
#include "engine/model/param_access.h"
#include "engine/shard/device_ops.h"
#include "engine/shard/parallelize.h"
#include "engine/shard/shard_context.h"
#include "engine/shard/shard_plan.h"
#include "engine/shard/tile_stream.h"

namespace accel::shard {

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
  // charged to `ledger`'s device pool. Errors: Parallelize's.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ShardedModel>> Create(
      const model::ModelLayout* layout, ShardPlan plan, ProcessGroups groups,
      absl::Duration timeout, MemoryLedger* ledger = nullptr, DeviceOps* ops = nullptr);

  const ShardPlan& plan() const { return ctx().plan(); }
  // Where this model's buffers live (the ops Create got, or its own host ops); the trainer
  // computes through the same ones.
  DeviceOps& ops() const { return ctx().ops(); }
  // Where the optimizer's state lives and its update runs: ops(), or under offload_optimizer
  // host ops of the ledger's host pool. OwnedRanges' params and grads are this memory.
  DeviceOps& optimizer_ops() const { return ctx().optimizer_ops(); }
  // The world communicator for host-memory values: the world itself, or on a device a view
  // that stages them through device memory (staged_communicator.h). For the trainer's own
  // agreements too (checkpoint outcomes, rank statistics, loading broadcasts).
  comm::Communicator* host_world() const { return ctx().host_world(); }
  bool offload_optimizer() const { return plan().options().offload_optimizer; }
  // NVMe offload: writes the offloaded state back to its files and drops it from memory (after
  // loading; FinishStep does it after every update). Nothing otherwise.
  [[nodiscard]] absl::Status EvictOffloaded() {
    if (ctx().optimizer_offloaded()) ACCEL_RETURN_IF_ERROR(optimizer_ops().Evict());
    return ctx().params_apart() ? ctx().param_ops().Evict() : absl::OkStatus();
  }
  // The stream the optimizer's update runs through when its storage streams it
  // (offload::Storage::StreamsUpdate: NVMe offload, OptimizerStreamOptions' tiles, its staging
  // buffers charged to `ledger`); null when the update runs in place.
  [[nodiscard]] absl::StatusOr<std::unique_ptr<TileStream>> CreateUpdateStream(
      MemoryLedger* ledger) const {
    if (!ctx().optimizer_storage().StreamsUpdate()) return std::unique_ptr<TileStream>();
    return TileStream::Create(OptimizerStreamOptions(plan()), ledger);
  }
  // Whether parameters or gradients are kept in a 16-bit dtype.
  bool mixed_precision() const { return !parts_.precision->fp32(); }
  // Low precision: bf16 parameters without fp32 masters (ShardOptions::master_dtype bf16).
  bool low_precision() const { return parts_.precision->low_precision(); }
  // The dtypes of every buffer class, for logs and memory records:
  // {"params":"bf16","grads":"bf16","master":"f32","optimizer":"f32"}.
  std::string DTypesJson() const { return parts_.precision->DTypesJson(); }
  // fp16 loss scaling: gradients are produced multiplied by `scale` and divided by it before
  // the optimizer sees them. 1 by default.
  void set_loss_scale(double scale) { loss_scale_ = scale; }
  // Seconds spent blocked in collectives since the last call (exposed communication): the host's
  // waits, plus on a device the compute stream's (call after the ops are synchronised).
  double TakeCommWaitSeconds() { return parts_.context->TakeCommWaitSeconds(); }
  // The backward's dloss for one micro-step of `accum`: loss_scale / (accum · world).
  float GradScale(int accum) const;

  // Takes this rank's pieces of a full parameter vector (layout order, num_params floats); every
  // rank must pass the same values (same seed, same file, or after BroadcastFull).
  [[nodiscard]] absl::Status LoadFull(const float* full);
  // The part of unit u, relative to the unit, whose values this rank keeps: [0, numel) when
  // parameters persist, else the real part of its shard. Empty for an all-padding shard.
  std::pair<int64_t, int64_t> HeldRange(int u) const { return parts_.params->HeldRange(u); }
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

  [[nodiscard]] absl::Status ZeroGrads() { return parts_.grads->ZeroGrads(); }
  // Before micro-step m's forward: whether its gradients are reduced as backward produces them
  // (the last micro-step, or every one with reduce_every_micro_step).
  void BeginMicroStep(int micro, int accum) { parts_.grads->BeginMicroStep(micro, accum); }
  // After micro-step m's backward: completes or issues the gradient reductions due now, and
  // after the last one prepares what the optimizer reads.
  [[nodiscard]] absl::Status EndMicroStep(int micro, int accum);
  // Σ g² over every element of the reduced gradient, counted once: each rank sums its shard
  // partition, the partials are all-gathered and added in rank order, so every rank (and every
  // non-hybrid strategy at one world size) gets the same bits.
  [[nodiscard]] absl::StatusOr<double> GradNormSquared();
  // The mean of `value` over all ranks, summed in rank order (loss agreement).
  [[nodiscard]] absl::StatusOr<double> MeanOverRanks(double value);
  // The sum of `value` over all ranks, in rank order: the same bits on every rank.
  [[nodiscard]] absl::StatusOr<double> SumOverRanks(double value);
  // The same ranges, in the same order, as ShardPlan::OwnedFlatRanges().
  std::vector<OwnedRange> OwnedRanges();
  // Every parameter of the layout, in layout order (param_views.cc). Valid for the model's
  // lifetime (the storage is fixed).
  std::vector<ParamView> ParamViews();
  // The optimizer has updated `range` (one of OwnedRanges()): under NVMe offload its values
  // reach the parameters and its state leaves memory now, so the update streams range by range
  // and only a range's state is in memory at a time. Elsewhere FinishStep does that work.
  [[nodiscard]] absl::Status RangeUpdated(const OwnedRange& range);
  // Before the optimizer updates `range`: settles the gathers in flight (they read the values
  // about to change) and returns what rides on a streamed update (OptimizerValues::UpdateHook;
  // empty unless under NVMe offload).
  [[nodiscard]] absl::StatusOr<TileHook> BeforeRangeUpdate(const OwnedRange& range);
  [[nodiscard]] absl::Status FinishStep();
  // After forward passes with no backward (evaluation, between steps): gathers in flight
  // complete, and every gathered copy a step keeps until its backward (the root, persistent and
  // reused units, their compute copies) is given back. Gradients, optimizer state and the kept
  // parameters are untouched; memory is as after FinishStep. Local (no collective).
  [[nodiscard]] absl::Status FinishForward();

  // ParamAccess, called by the model.
  absl::StatusOr<const float*> Params(int unit, model::Pass pass) override;
  absl::Status Release(int unit, model::Pass pass) override;
  // The gathered bf16 parameters themselves under bf16 mixed precision (null otherwise).
  const uint16_t* ParamsBf16(int unit) override {
    return parts_.precision->Bf16(parts_.params->gathered(unit));
  }
  // For a model that reads some ranges of a unit only through ParamsBf16 (its matmul weights,
  // model::Gpt2::MatmulWeightRanges): the fp32 copy Params() returns leaves those ranges
  // unconverted, so their values there are unspecified. `ranges[u]` lists [offset, offset +
  // numel) within unit u, sorted and disjoint. Saves a conversion of nearly every parameter
  // twice a step. Ignored unless the parameters are bf16.
  void SkipFp32Copy(std::vector<std::vector<std::pair<int64_t, int64_t>>> ranges) {
    parts_.precision->SkipFp32Copy(std::move(ranges));
  }
  absl::StatusOr<float*> Grads(int unit) override { return parts_.grads->LocalGrads(unit); }
  absl::Status GradsReady(int unit) override { return parts_.grads->GradsReady(unit); }

 private:
  explicit ShardedModel(ShardParts parts) : parts_(std::move(parts)) {}
  ShardContext& ctx() const { return *parts_.context; }
  absl::Status CheckUnit(int u) const;

  ShardParts parts_;
  double loss_scale_ = 1;
};

}  // namespace accel::shard
