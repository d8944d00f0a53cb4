// ShardPlan: how one rank holds the model — a pure function of (layout, world, rank, options),
// computed and validated before any memory is allocated (torchtitan's "shapes first").
//
// Every unit (ModelLayout's units: 0 = root, 1 + l = block l) is one flat range, padded to a
// multiple of the shard-group size S; rank r of the group owns elements [r·s, (r+1)·s) of the
// padded unit, s = padded / S. Strategies (DESIGN.md §3.1):
//   kNoShard          params full, grads all-reduced, optimizer state full       (ZeRO-0)
//   kShardOptimizer   params full, grads reduced at the boundary, state sharded   (ZeRO-1)
//   kShardGradOp      params full, grads reduce-scattered per unit, state sharded (ZeRO-2)
//   kFullShard        params gathered per unit and freed after use, grads and
//                     state sharded                                               (ZeRO-3)
//   kHybridShard / kHybridShardZero2: kFullShard / kShardGradOp inside groups of
//                     hybrid_group_size consecutive ranks, replicated across groups.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/io/async_io.h"
#include "engine/model/param_specs.h"
#include "engine/tensor/dtype.h"

namespace accel::shard {

enum class Strategy {
  kNoShard,
  kShardOptimizer,
  kShardGradOp,
  kFullShard,
  kHybridShard,
  kHybridShardZero2,
};
// no_shard, zero1, shard_grad_op, full_shard, hybrid_shard, hybrid_shard_zero2 (the config
// contract's names); ParseStrategy also takes FSDP's (NO_SHARD, SHARD_GRAD_OP, ...).
std::string_view StrategyName(Strategy s);
[[nodiscard]] absl::StatusOr<Strategy> ParseStrategy(std::string_view name);
// hybrid_shard and hybrid_shard_zero2: sharded within groups, replicated across them.
bool IsHybrid(Strategy s);

enum class BackwardPrefetch { kNone, kBackwardPre, kBackwardPost };

struct ShardOptions {
  Strategy strategy = Strategy::kNoShard;
  int hybrid_group_size = 0;          // hybrid only: ranks per shard group (divides world)
  bool reshard_after_forward = true;  // full_shard: free gathered block params after forward
  bool forward_prefetch = false;      // gather unit i+1 before unit i's forward
  BackwardPrefetch backward_prefetch = BackwardPrefetch::kBackwardPre;
  int max_inflight_gathers = 2;       // bound on prefetched all-gathers not yet used
  // Units at most this many elements stay gathered for the whole step (DeepSpeed's
  // stage3_param_persistence_threshold).
  int64_t param_persistence_threshold = 0;
  // Reduce gradients after every micro-step (DeepSpeed stage 2) instead of at the
  // accumulation boundary only.
  bool reduce_every_micro_step = false;
  // Mixed precision (DESIGN.md §3.2): parameters are all-gathered and computed in param_dtype,
  // gradients reduced in reduce_dtype (f32 accumulation inside the collective). When either is
  // not f32 the optimizer updates fp32 master copies of this rank's ranges, and the
  // low-precision parameters are rounded from them after every step (unless master_dtype says
  // otherwise).
  DType param_dtype = DType::kF32;
  DType reduce_dtype = DType::kF32;
  // The dtype of the values the optimizer updates: f32 (fp32 masters under mixed precision),
  // or bf16 with param_dtype bf16 for FSDP's low precision (weights loaded in bf16 and no mixed
  // precision): no master, AdamW updates the bf16 parameters and keeps bf16 moments.
  DType master_dtype = DType::kF32;
  // ZeRO-Offload of the optimizer (DeepSpeed's offload_optimizer.device: cpu): the fp32 masters
  // of this rank's ranges, the AdamW moments and the step live in host memory; reduced
  // gradients go to the host, the update runs there, and the parameters come back rounded to
  // param_dtype. Applies in fp32 too (then the masters are copies of the parameters). Not with
  // low precision.
  bool offload_optimizer = false;
  // Parameter offload (FSDP's offload_params, DeepSpeed's offload_param.device: cpu / nvme):
  // the kept parameter shards live off the compute memory, and each all-gather starts from a
  // copy of the shard on the compute device. Needs a strategy that shards parameters
  // (full_shard, hybrid_shard) and fp32 masters (not low precision). With offload_optimizer
  // the shards go where the optimizer's state goes (offload_dir) unless offload_param_dir says
  // otherwise; without it (DeepSpeed's offload_param alone) the optimizer's state, its step and
  // the reduced gradients stay in compute memory, and the shards go to offload_param_dir
  // (files) or host memory (empty).
  bool offload_params = false;
  // Where offloaded optimizer state goes: empty for host memory, else a directory for NVMe
  // offload (DeepSpeed's offload_optimizer.nvme_path): the state lives in files there, paged in
  // while it is used and written back and dropped from memory after every step
  // (CreateFileBackedDeviceOps).
  std::string offload_dir;
  // NVMe offload of the parameter shards to a directory of their own (DeepSpeed's
  // offload_param.nvme_path, which users put on another drive than the optimizer's for
  // bandwidth): the shards are files there, read per unit at each gather and written back
  // after each update. Empty: with the optimizer's state (above). Needs offload_params.
  std::string offload_param_dir;
  // The parameter shards in host memory even where the optimizer's state is in files
  // (DeepSpeed's offload_param.device cpu beside offload_optimizer.device nvme). Needs
  // offload_params; not with offload_param_dir.
  bool offload_params_to_host = false;
  // NVMe offload streams the update in tiles of at most this many elements (DeepSpeed's
  // sub_group_size, capped): the optimizer reads each tile's masters, moments and gradients
  // into two sets of staging buffers and writes it back through AsyncIo (shard::TileStream),
  // so the update holds two tiles of each, not a whole unit (the root's embedding is the
  // largest); the rounded parameters follow tile by tile.
  // 1 M: two staging sets of 20 MB each, small beside any rank's compute buffers, while each
  // transfer (4 MB per array) still keeps the disk's queue full.
  int64_t offload_tile_numel = int64_t{1} << 20;
  // NVMe offload's transfers (DeepSpeed's aio section: block_size, queue_depth, single_submit,
  // overlap_events) and whether its staging buffers are locked in RAM (pin_memory).
  io::AioOptions offload_aio;
  bool offload_pin_buffers = false;
  // DeepSpeed ZeRO-3 scheduling, in elements; 0 = FSDP's rule (prefetch exactly the next unit,
  // no cap on what is gathered). prefetch_bucket_numel: keep prefetching later units until this
  // many elements are in flight (stage3_prefetch_bucket_size). max_live_numel: never hold more
  // gathered elements than this at once, the unit in use excepted (stage3_max_live_parameters).
  // max_reuse_distance: a unit needed again within this many elements of gathering stays
  // gathered instead of being freed (stage3_max_reuse_distance).
  int64_t prefetch_bucket_numel = 0;
  int64_t max_live_numel = 0;
  int64_t max_reuse_distance = 0;
};

// The directory the offloaded parameter shards live in, empty for host memory (or without
// parameter offload): offload_param_dir, else the optimizer's offload_dir when it is offloaded
// and offload_params_to_host does not say otherwise.
std::string ParamOffloadDir(const ShardOptions& options);
// Whether the parameter shards live in the optimizer's own offload storage (offload_params
// with offload_optimizer, both in the same place) rather than in a storage of their own
// (shard::CreateParamStorage).
bool ParamsWithOptimizer(const ShardOptions& options);

struct UnitShard {
  int64_t offset = 0;        // the unit's first element in the flat layout
  int64_t numel = 0;         // real elements
  int64_t padded_numel = 0;  // numel rounded up to a multiple of the shard-group size
  int64_t shard_numel = 0;   // padded_numel / shard-group size
  int64_t shard_begin = 0;   // this rank's first element, relative to the unit
  // Real (non-padding) elements of this rank's shard: [shard_begin, shard_begin + valid).
  int64_t shard_valid = 0;
};

class ShardPlan {
 public:
  // InvalidArgument naming the problem: world < 1, rank out of range, a hybrid group size that
  // does not divide the world, hybrid without a group size.
  [[nodiscard]] static absl::StatusOr<ShardPlan> Create(const model::ModelLayout& layout, int world,
                                                        int rank, const ShardOptions& options);

  const ShardOptions& options() const { return options_; }
  Strategy strategy() const { return options_.strategy; }
  int world() const { return world_; }
  int rank() const { return rank_; }
  int shard_group_size() const { return shard_size_; }
  int rank_in_shard_group() const { return rank_ % shard_size_; }
  int shard_group_index() const { return rank_ / shard_size_; }
  int num_replicas() const { return world_ / shard_size_; }
  bool hybrid() const;

  // Whether full parameters stay resident between steps (everything but (hybrid) full shard).
  bool params_persistent() const;
  // Whether optimizer state covers only this rank's shard (everything but no_shard).
  bool optimizer_sharded() const { return options_.strategy != Strategy::kNoShard; }
  // Whether gradients are reduce-scattered per unit as backward produces them (zero2/zero3 and
  // hybrids) rather than reduced at the end of backward.
  bool reduce_per_unit() const;

  int num_units() const { return static_cast<int>(units_.size()); }
  const UnitShard& unit(int u) const { return units_[u]; }
  int64_t total_padded() const { return total_padded_; }

  // The flat ranges [begin, end) this rank updates and keeps optimizer state for: whole units
  // under no_shard, else the real part of its shard of each unit (empty shards skipped).
  std::vector<std::pair<int64_t, int64_t>> OwnedFlatRanges() const;
  // Whether this rank is the first holder of its data (it writes checkpoints): rank 0 under
  // no_shard, the first shard group under hybrid strategies, every rank otherwise.
  bool PrimaryReplica() const;

  // One line for logs: "full_shard: 4 ranks, shard group 4, 13 units, 3.2 MB shard".
  std::string Describe() const;

 private:
  ShardOptions options_;
  int world_ = 1, rank_ = 0, shard_size_ = 1;
  std::vector<UnitShard> units_;
  int64_t total_padded_ = 0, total_shard_ = 0;
};

}  // namespace accel::shard
