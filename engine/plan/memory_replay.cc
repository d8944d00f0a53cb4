// The engine model behind the memory plan (memory_replay.h). Each function names the engine
// code whose charges it replays; the sizes are the ShardPlan's.
#include "engine/plan/memory_replay.h"

#include <algorithm>
#include <array>
#include <deque>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/offload/storage.h"
#include "engine/shard/parallelize.h"
#include "engine/shard/tile_stream.h"

namespace accel::plan::internal {
namespace {

using shard::ShardOptions;
using shard::ShardPlan;
using shard::UnitShard;

// A block as DeviceBlock + BufferPool hold it: its pool, category and bytes (0: empty).
struct Block {
  MemoryPool pool = MemoryPool::kDevice;
  MemoryCategory category = MemoryCategory::kOther;
  int64_t bytes = 0;
  bool operator==(const Block&) const = default;
};

// The host DeviceOps' memory as the ledger sees it (host_device_ops.cc, buffer_pool.cc):
// Allocate charges for good, Acquire takes a cached block of exactly the size (recategorised)
// or charges a new one, Recycle moves a block to the cache as "other", Trim frees the cache.
class Memory {
 public:
  explicit Memory(MemoryLedger* ledger) : ledger_(*ledger) {}
  void Allocate(MemoryPool pool, MemoryCategory category, int64_t bytes) {
    if (bytes > 0) ledger_.Charge(pool, category, bytes);
  }
  void Free(MemoryPool pool, MemoryCategory category, int64_t bytes) {
    if (bytes > 0) ledger_.Release(pool, category, bytes);
  }
  Block Acquire(MemoryPool pool, MemoryCategory category, int64_t bytes) {
    if (bytes <= 0) return {};
    auto& cache = cache_[static_cast<int>(pool)];
    auto it = cache.find(bytes);
    if (it != cache.end()) {
      cache.erase(it);
      ledger_.Release(pool, MemoryCategory::kOther, bytes);
    }
    ledger_.Charge(pool, category, bytes);
    return {pool, category, bytes};
  }
  void Recycle(Block& block) {
    if (block.bytes == 0) return;
    ledger_.Release(block.pool, block.category, block.bytes);
    ledger_.Charge(block.pool, MemoryCategory::kOther, block.bytes);
    cache_[static_cast<int>(block.pool)].insert(block.bytes);
    block = {};
  }
  void Trim(MemoryPool pool) {
    auto& cache = cache_[static_cast<int>(pool)];
    for (int64_t bytes : cache) ledger_.Release(pool, MemoryCategory::kOther, bytes);
    cache.clear();
  }
  // What the next charges depend on and what they leave behind: the cache and the counts.
  struct State {
    std::array<std::multiset<int64_t>, kNumMemoryPools> cache;
    std::array<int64_t, kNumMemoryPools * kNumMemoryCategories> current{};
    bool operator==(const State&) const = default;
  };
  State Snapshot() const {
    State s;
    for (int p = 0; p < kNumMemoryPools; ++p) {
      s.cache[p] = cache_[p];
      for (int c = 0; c < kNumMemoryCategories; ++c) {
        s.current[p * kNumMemoryCategories + c] =
            ledger_.Get(static_cast<MemoryPool>(p), static_cast<MemoryCategory>(c)).current;
      }
    }
    return s;
  }

 private:
  MemoryLedger& ledger_;
  std::multiset<int64_t> cache_[kNumMemoryPools];
};

constexpr MemoryCategory kParams = MemoryCategory::kParams;
constexpr MemoryCategory kGrads = MemoryCategory::kGrads;
constexpr MemoryCategory kState = MemoryCategory::kOptimizerState;

class RankReplay {
 public:
  // `storage`: the optimizer's, as CreateOptimizerStorage chose it in count-only mode (null
  // without offload); its Allocate charges the ledger as the engine's does.
  // `param_storage`: the parameter shards' own (CreateParamStorage, count-only; null when
  // they are not offloaded or share the optimizer's).
  RankReplay(const ReplayInput& in, MemoryLedger* ledger, offload::Storage* storage,
             offload::Storage* param_storage)
      : in_(in),
        plan_(*in.plan),
        o_(plan_.options()),
        mem_(ledger),
        units_(plan_.num_units()),
        psize_(DTypeSize(o_.param_dtype)),
        wsize_(DTypeSize(o_.reduce_dtype)),
        fp32_(o_.param_dtype == DType::kF32 && o_.reduce_dtype == DType::kF32),
        low_precision_(o_.master_dtype != DType::kF32),
        storage_(storage),
        param_storage_(param_storage),
        // CreateOffloadDeviceOps: the offloaded state's transient blocks are host memory.
        opt_pool_(storage != nullptr ? MemoryPool::kHost : MemoryPool::kDevice),
        masters_(!low_precision_ && (!fp32_ || o_.offload_optimizer)),
        grad_copies_(low_precision_ || masters_),
        sharded_params_(!plan_.params_persistent()),
        per_unit_(plan_.reduce_per_unit()),
        in_place_(fp32_) {}

  absl::Status Run() {
    Setup();
    for (int s = 0; s < in_.steps; ++s) ACCEL_RETURN_IF_ERROR(Step());
    return absl::OkStatus();
  }

 private:
  // Micro-steps replayed before the last one settle within two (the first fills the cache);
  // a few more are allowed before the replay calls itself wrong.
  static constexpr int kMaxUnsettledMicroSteps = 8;

  struct Unit {
    Block full, copy, local, wire, grad_copy;
    bool gathered = false, in_flight = false, keep_for_step = false, keep_for_reuse = false;
    bool grad_copy_file = false;  // a kept gradient copy (KeepsGradCopies) is allocated
    bool operator==(const Unit&) const = default;
  };
  // Everything a micro-step's charges depend on (besides the constant plan and options).
  struct State {
    std::vector<Unit> units;
    std::deque<int> pending;
    Memory::State memory;
    bool operator==(const State&) const = default;
  };
  State Snapshot() const { return {units_, pending_, mem_.Snapshot()}; }
  const UnitShard& U(int u) const { return plan_.unit(u); }
  int64_t SpanLength(int u) const {  // ShardContext::optimizer_span
    return plan_.optimizer_sharded() ? U(u).shard_numel : U(u).padded_numel;
  }

  // How passes over the optimizer's state run (ShardContext::optimizer_storage).
  const offload::Storage& OptimizerStorage() const {
    return storage_ != nullptr ? *storage_ : offload::InPlace();
  }
  // A persistent block of the optimizer's memory (ShardContext::optimizer_ops().Allocate): the
  // chosen storage's own Allocate, counting only; compute memory without offload.
  void AllocateOptimizer(MemoryCategory category, int64_t bytes) {
    if (storage_ == nullptr) return mem_.Allocate(MemoryPool::kDevice, category, bytes);
    (void)storage_->Allocate(bytes, category);  // count-only: cannot fail
  }

  // Parallelize's Allocate calls, InitWeights, AdamW::Create, the model runner's activations.
  void Setup() {
    const int n = plan_.num_units();
    for (int u = 0; u < n; ++u) {  // ResidentParams / ShardedParams::Allocate
      if (sharded_params_) {
        // ApplyPlacement: the kept shards live in ShardContext::param_ops(): their own
        // storage, or the optimizer's under offload_params.
        if (param_storage_ != nullptr) {
          (void)param_storage_->Allocate(U(u).shard_numel * psize_, kParams);  // count-only
        } else if (o_.offload_params) {
          AllocateOptimizer(kParams, U(u).shard_numel * psize_);
        } else {
          mem_.Allocate(MemoryPool::kDevice, kParams, U(u).shard_numel * psize_);
        }
      } else {
        mem_.Allocate(MemoryPool::kDevice, kParams, U(u).padded_numel * psize_);
      }
    }
    for (int u = 0; masters_ && u < n; ++u) {  // MasterValues::Allocate
      AllocateOptimizer(kState, SpanLength(u) * 4);
    }
    for (int u = 0; u < n; ++u) {  // BoundaryReducer / PerUnitReducer::Allocate
      if (per_unit_) {
        // With the optimizer offloaded the reduced shards live with it (PerUnitReducer::home).
        AllocateOptimizer(kGrads, U(u).shard_numel * wsize_);
      } else {
        mem_.Allocate(MemoryPool::kDevice, kGrads, U(u).padded_numel * (in_place_ ? 4 : wsize_));
      }
    }
    InitWeights();
    const int64_t state_size = low_precision_ ? 2 : 4;  // Trainer::Create's AdamW state dtype
    if (OptimizerStorage().StreamsUpdate()) {  // ShardedModel::CreateUpdateStream's buffers
      mem_.Allocate(MemoryPool::kHost, kState,
                    shard::TileStream::BufferBytes(shard::OptimizerStreamOptions(plan_)));
    }
    for (const auto& [begin, end] : plan_.OwnedFlatRanges()) {
      AllocateOptimizer(kState, 2 * (end - begin) * state_size);
    }
    mem_.Allocate(MemoryPool::kDevice, MemoryCategory::kActivations, in_.activation_bytes);
    EvictOffloaded();
  }

  // weight_loading.cc: the buffers each loading path holds while it loads ("other", host).
  void InitWeights() {
    const PlannedRun& t = *in_.run;
    const model::ModelLayout& layout = *in_.layout;
    int64_t floats = 0;
    if (t.loads_weights && t.zero3_init) {
      for (int u = 0; u < plan_.num_units(); ++u) {
        floats = std::max(floats, sharded_params_ ? U(u).shard_valid : U(u).numel);
      }
      floats = std::max<int64_t>(floats, 1);
    } else if (t.cpu_ram_efficient_loading || (!t.loads_weights && !t.sync_module_states)) {
      // One unit at a time: broadcast with a status element, or a seeded init unit by unit.
      for (int u = 0; u < layout.num_units(); ++u) {
        floats = std::max(floats, layout.unit(u).numel);
      }
      if (t.cpu_ram_efficient_loading) floats += 1;
    } else {
      floats = layout.num_params();
    }
    mem_.Allocate(MemoryPool::kHost, MemoryCategory::kOther, floats * 4);
    mem_.Free(MemoryPool::kHost, MemoryCategory::kOther, floats * 4);
  }

  // Trainer::TrainStep. The micro-steps before the last one run from the state the previous one left; once one
  // leaves the state as it found it, the rest repeat it exactly (the same charges from the same
  // state: no new peak), so they are not replayed — the cost is independent of grad_accum
  // (issue 28: grad_accum 2e9 kept the worker here for minutes).
  absl::Status Step() {
    const int64_t accum = in_.run->grad_accum;
    State before = Snapshot();
    for (int64_t micro = 0; micro + 1 < accum; ++micro) {
      MicroStep(/*last=*/false);
      State after = Snapshot();
      if (after == before) break;
      if (micro + 1 >= kMaxUnsettledMicroSteps) {
        return absl::InternalError(absl::StrCat(
            "memory plan: the replay of a micro-step did not settle after ",
            kMaxUnsettledMicroSteps, " micro-steps (grad_accum ", accum,
            "); the plan cannot be computed"));
      }
      before = std::move(after);
    }
    MicroStep(/*last=*/true);
    FinishStep();
    return absl::OkStatus();
  }

  // One micro-step through ShardedModel, Gpt2::Forward and Gpt2::Backward.
  void MicroStep(bool last) {
    const int n = plan_.num_units();
    reducing_ = o_.reduce_every_micro_step || last;
    Params(0, /*forward=*/true);
    for (int u = 1; u < n; ++u) {
      Params(u, true);
      Release(u, true);
    }
    Release(0, true);
    Params(0, false);
    LocalGrads(0);
    for (int u = n - 1; u >= 1; --u) {
      Params(u, false);
      LocalGrads(u);
      Release(u, false);
      GradsReady(u);
    }
    Release(0, false);
    GradsReady(0);
    EndMicroStep(last);
  }

  void FinishStep() {
    const int n = plan_.num_units();
    // ShardedModel::FinishStep: precision ReleaseAll, optimizer FinishStep, params AfterUpdate.
    for (Unit& unit : units_) mem_.Recycle(unit.copy);
    for (Unit& unit : units_) mem_.Recycle(unit.grad_copy);
    for (int u = 0; u < n; ++u) {
      units_[u].keep_for_step = units_[u].keep_for_reuse = false;
      MaybeFree(u);
    }
    EvictOffloaded();
  }

  void EvictOffloaded() {  // ShardedModel::EvictOffloaded → HostDeviceOps::Evict
    if (storage_ != nullptr && !storage_->KeepsTransientCache()) mem_.Trim(opt_pool_);
  }

  // ShardedModel::Params: ParamStore::Use, then Precision::ComputeParams.
  void Params(int u, bool forward) {
    if (sharded_params_) {
      EnsureGathered(u);
      BeforeUse(u, forward);
    }
    if (!fp32_ && units_[u].copy.bytes == 0) {
      units_[u].copy = mem_.Acquire(MemoryPool::kDevice, kParams, U(u).padded_numel * 4);
    }
  }

  // ShardedModel::Release: Precision::Release, then ParamStore::Release (sharded_params.cc).
  void Release(int u, bool forward) {
    if (!fp32_ && u != 0) mem_.Recycle(units_[u].copy);
    if (!sharded_params_) return;
    Unit& unit = units_[u];
    if (forward) {
      if (u != 0 && o_.reshard_after_forward) {
        unit.keep_for_reuse = KeepForReuse(u);
        MaybeFree(u);
      }
      return;
    }
    unit.keep_for_reuse = false;
    if (u != 0) MaybeFree(u);
    if (o_.backward_prefetch == shard::BackwardPrefetch::kBackwardPost) Prefetch(NextBackward(u));
  }

  // ShardedParams: a gather acquires the padded unit in compute memory until MaybeFree.
  void IssueGather(int u) {
    units_[u].full = mem_.Acquire(MemoryPool::kDevice, kParams, U(u).padded_numel * psize_);
    units_[u].in_flight = true;
  }
  void EnsureGathered(int u) {
    Unit& unit = units_[u];
    if (unit.gathered) return;
    if (!unit.in_flight) IssueGather(u);
    unit.in_flight = false;
    unit.gathered = true;
    if (u == 0 || U(u).numel <= o_.param_persistence_threshold) unit.keep_for_step = true;
  }
  void MaybeFree(int u) {
    Unit& unit = units_[u];
    if (unit.keep_for_step || unit.keep_for_reuse || unit.in_flight) return;
    mem_.Recycle(unit.full);
    unit.gathered = false;
  }

  // GatherScheduler (gather_scheduler.cc).
  int NextBackward(int u) const {
    if (u == 0) return plan_.num_units() >= 2 ? plan_.num_units() - 1 : -1;
    return u >= 2 ? u - 1 : -1;
  }
  int Next(int u, bool forward) const {
    if (forward) return u + 1 < plan_.num_units() ? u + 1 : -1;
    return NextBackward(u);
  }
  int64_t Numel(bool in_flight_only) const {
    int64_t total = 0;
    for (int v = 0; v < plan_.num_units(); ++v) {
      const Unit& unit = units_[v];
      if (unit.in_flight || (!in_flight_only && unit.gathered)) total += U(v).padded_numel;
    }
    return total;
  }
  bool KeepForReuse(int u) const {
    if (o_.max_reuse_distance <= 0) return false;
    int64_t distance = 0;
    for (int v = u + 1; v < plan_.num_units(); ++v) distance += 2 * U(v).numel;
    return distance <= o_.max_reuse_distance;
  }
  void Prefetch(int u) {
    if (u < 0 || units_[u].gathered || units_[u].in_flight) return;
    int inflight = 0;
    for (const Unit& unit : units_) inflight += unit.in_flight ? 1 : 0;
    if (o_.prefetch_bucket_numel <= 0 && inflight >= o_.max_inflight_gathers) return;
    if (o_.max_live_numel > 0 && Numel(false) + U(u).padded_numel > o_.max_live_numel) return;
    IssueGather(u);
  }
  void BeforeUse(int u, bool forward) {
    if (o_.prefetch_bucket_numel > 0) {
      for (int v = Next(u, forward); v >= 0; v = Next(v, forward)) {
        if (Numel(true) >= o_.prefetch_bucket_numel) break;
        if (units_[v].gathered || units_[v].in_flight) continue;
        Prefetch(v);
        if (!units_[v].in_flight) break;
      }
      return;
    }
    const bool prefetch =
        forward ? o_.forward_prefetch : o_.backward_prefetch == shard::BackwardPrefetch::kBackwardPre;
    if (prefetch) Prefetch(Next(u, forward));
  }

  // GradReducer (grad_reducer.cc).
  void LocalGrads(int u) {
    if (!per_unit_ && in_place_) return;  // BoundaryReducer keeps them allocated
    if (units_[u].local.bytes == 0) {
      units_[u].local = mem_.Acquire(MemoryPool::kDevice, kGrads, U(u).padded_numel * 4);
    }
  }
  void GradsReady(int u) {
    if (!per_unit_ || !reducing_) return;
    Drain(1);
    Unit& unit = units_[u];
    if (in_place_) {
      unit.wire = unit.local;
      unit.local = {};
    } else {
      unit.wire = mem_.Acquire(MemoryPool::kDevice, MemoryCategory::kCommunication,
                               U(u).padded_numel * wsize_);
      mem_.Recycle(unit.local);
    }
    pending_.push_back(u);
  }
  void Drain(size_t keep) {
    while (pending_.size() > keep) {
      mem_.Recycle(units_[pending_.front()].wire);
      pending_.pop_front();
    }
  }
  void EndMicroStep(bool last) {
    if (per_unit_) {
      Drain(0);
    } else if (last && !in_place_) {
      for (Unit& unit : units_) mem_.Recycle(unit.local);
    }
    if (!last || !grad_copies_) return;
    for (int u = 0; u < plan_.num_units(); ++u) {  // GradCopies::Prepare
      if (OptimizerStorage().KeepsGradCopies()) {
        // Allocated at the first step and kept.
        if (!units_[u].grad_copy_file) AllocateOptimizer(kGrads, SpanLength(u) * 4);
        units_[u].grad_copy_file = true;
      } else {
        units_[u].grad_copy = mem_.Acquire(opt_pool_, kGrads, SpanLength(u) * 4);
      }
    }
  }

  const ReplayInput& in_;
  const ShardPlan& plan_;
  const ShardOptions& o_;
  Memory mem_;
  std::vector<Unit> units_;
  std::deque<int> pending_;  // PerUnitReducer's reductions in flight
  const int64_t psize_, wsize_;
  const bool fp32_, low_precision_;
  offload::Storage* const storage_;  // the optimizer's, counting only; null: compute memory
  offload::Storage* const param_storage_;  // the parameters' own, counting only; or null
  const MemoryPool opt_pool_;        // where the optimizer's transient blocks are charged
  const bool masters_, grad_copies_, sharded_params_, per_unit_, in_place_;
  bool reducing_ = true;
};

}  // namespace

absl::Status ReplayRank(const ReplayInput& input, MemoryLedger* ledger) {
  // The engine's own choice of storage (shard::ApplyOffload's), in count-only mode.
  ACCEL_ASSIGN_OR_RETURN(
      std::unique_ptr<offload::Storage> storage,
      shard::CreateOptimizerStorage(input.plan->options(), ledger, offload::Mode::kCountOnly));
  ACCEL_ASSIGN_OR_RETURN(
      std::unique_ptr<offload::Storage> param_storage,
      shard::CreateParamStorage(input.plan->options(), ledger, offload::Mode::kCountOnly));
  return RankReplay(input, ledger, storage.get(), param_storage.get()).Run();
}

}  // namespace accel::plan::internal
