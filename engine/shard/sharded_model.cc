// ShardedModel: setup, waits, and the parameter side of ParamAccess (gathers, prefetch,
// freeing). Loading and gathering for saves are in sharded_model_io.cc, the gradient side in
// sharded_model_grads.cc.
#include "engine/shard/sharded_model.h"

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel::shard {

using model::Pass;

absl::StatusOr<std::unique_ptr<ShardedModel>> ShardedModel::Create(
    const model::Gpt2Layout* layout, ShardPlan plan, ProcessGroups groups, absl::Duration timeout,
    MemoryLedger* ledger, DeviceOps* ops) {
  if (groups.world == nullptr || groups.shard == nullptr) {
    return absl::InvalidArgumentError("ShardedModel needs a world and a shard communicator");
  }
  if (groups.world->size() != plan.world() || groups.shard->size() != plan.shard_group_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "communicator sizes (world ", groups.world->size(), ", shard ", groups.shard->size(),
        ") do not match the plan (", plan.world(), ", ", plan.shard_group_size(), ")"));
  }
  if (plan.hybrid() && plan.num_replicas() > 1 &&
      (groups.replicate == nullptr || groups.replicate->size() != plan.num_replicas())) {
    return absl::InvalidArgumentError(absl::StrCat("hybrid sharding needs a replicate "
                                                   "communicator of ",
                                                   plan.num_replicas(), " ranks"));
  }
  for (DType d : {plan.options().param_dtype, plan.options().reduce_dtype}) {
    if (d != DType::kF32 && d != DType::kBF16 && d != DType::kF16) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter and reduce dtypes must be fp32, bf16 or fp16, got ",
                       std::string(DTypeName(d))));
    }
  }
  std::unique_ptr<ShardedModel> m(new ShardedModel(
      layout, std::move(plan), groups, timeout, ledger ? ledger : MemoryLedger::Default()));
  m->mixed_ = m->plan_.options().param_dtype != DType::kF32 ||
              m->plan_.options().reduce_dtype != DType::kF32;
  m->low_precision_ = m->plan_.options().master_dtype != DType::kF32;
  if (ops == nullptr) {
    m->owned_ops_ = CreateHostDeviceOps(m->ledger_);
    ops = m->owned_ops_.get();
  }
  m->ops_ = ops;
  // Host values (loss, norm, broadcast weights) travel through host views of the groups:
  // the groups themselves on host memory, staged through device blocks otherwise.
  m->host_world_ = groups.world;
  m->host_shard_ = groups.shard;
  if (!ops->host_addressable()) {
    m->staged_world_ = CreateStagedCommunicator(groups.world, ops, timeout);
    m->host_world_ = m->staged_world_.get();
    m->host_shard_ = m->host_world_;
    if (groups.shard != groups.world) {
      m->staged_shard_ = CreateStagedCommunicator(groups.shard, ops, timeout);
      m->host_shard_ = m->staged_shard_.get();
    }
  }
  m->masters_ = (m->mixed_ && !m->low_precision_) || m->plan_.options().offload_optimizer;
  m->optimizer_ops_ = ops;
  if (m->plan_.options().offload_optimizer) {
    const std::string& dir = m->plan_.options().offload_dir;
    if (dir.empty()) {
      m->owned_optimizer_ops_ = CreateHostDeviceOps(m->ledger_, MemoryPool::kHost);
    } else {
      ACCEL_ASSIGN_OR_RETURN(m->owned_optimizer_ops_,
                             CreateFileBackedDeviceOps(m->ledger_, dir));
    }
    m->optimizer_ops_ = m->owned_optimizer_ops_.get();
  }
  ACCEL_RETURN_IF_ERROR(m->Allocate());
  return m;
}

ShardedModel::~ShardedModel() {
  // Outstanding collectives read and write our buffers: let them finish (or fail) first.
  for (Unit& u : units_) {
    if (u.gather) (void)u.gather->Wait(timeout_);
  }
  for (const PendingReduce& p : pending_reduces_) (void)p.work->Wait(timeout_);
}

absl::Status ShardedModel::Allocate() {
  auto alloc = [&](int64_t bytes, MemoryCategory c, DeviceBlock* b) -> absl::Status {
    ACCEL_ASSIGN_OR_RETURN(*b, ops_->Allocate(bytes, c));
    return absl::OkStatus();
  };
  units_.resize(plan_.num_units());
  for (int u = 0; u < plan_.num_units(); ++u) {
    const UnitShard& us = plan_.unit(u);
    Unit& unit = units_[u];
    if (plan_.params_persistent()) {
      ACCEL_RETURN_IF_ERROR(alloc(us.padded_numel * param_size(), MemoryCategory::kParams,
                                  &unit.full));
      unit.gathered = true;
    } else if (plan_.options().offload_params) {
      ACCEL_ASSIGN_OR_RETURN(unit.shard, optimizer_ops_->Allocate(us.shard_numel * param_size(),
                                                                  MemoryCategory::kParams));
    } else {
      ACCEL_RETURN_IF_ERROR(alloc(us.shard_numel * param_size(), MemoryCategory::kParams,
                                  &unit.shard));
    }
    const int64_t reduced_numel = plan_.reduce_per_unit() ? us.shard_numel : us.padded_numel;
    if (masters_) {
      ACCEL_ASSIGN_OR_RETURN(unit.master,
                             optimizer_ops_->Allocate(MasterLength(u) * sizeof(float),
                                                      MemoryCategory::kOptimizerState));
    }
    if (mixed_) {
      ACCEL_RETURN_IF_ERROR(alloc(reduced_numel * reduce_size(), MemoryCategory::kGrads,
                                  &unit.reduced));
    } else if (plan_.reduce_per_unit()) {
      ACCEL_RETURN_IF_ERROR(alloc(reduced_numel * sizeof(float), MemoryCategory::kGrads,
                                  &unit.reduced));
    } else {
      ACCEL_RETURN_IF_ERROR(alloc(reduced_numel * sizeof(float), MemoryCategory::kGrads,
                                  &unit.full_grads));
    }
  }
  return absl::OkStatus();
}

std::string ShardedModel::DTypesJson() const {
  const ShardOptions& o = plan_.options();
  const std::string params(DTypeName(o.param_dtype)), grads(DTypeName(o.reduce_dtype));
  const std::string master = low_precision_ ? params : mixed_ ? "f32" : params;
  return absl::StrCat(R"({"params":")", params, R"(","grads":")", grads, R"(","master":")",
                      master, R"(","optimizer":")", low_precision_ ? params : "f32", R"("})");
}

int64_t ShardedModel::MasterBegin(int u) const {
  return plan_.optimizer_sharded() ? plan_.unit(u).shard_begin : 0;
}

int64_t ShardedModel::MasterLength(int u) const {
  return plan_.optimizer_sharded() ? plan_.unit(u).shard_numel : plan_.unit(u).padded_numel;
}

float ShardedModel::GradScale(int accum) const {
  return static_cast<float>(loss_scale_ / (static_cast<double>(accum) * plan_.world()));
}

absl::Status ShardedModel::Await(comm::Communicator& comm,
                                 const std::shared_ptr<comm::Work>& work) {
  const absl::Time start = absl::Now();
  absl::Status s = ops_->AfterCollective(comm, work, timeout_);
  comm_wait_seconds_ += absl::ToDoubleSeconds(absl::Now() - start);
  return s;
}

absl::Status ShardedModel::AwaitOnHost(comm::Communicator& comm,
                                       const std::shared_ptr<comm::Work>& work) {
  ACCEL_RETURN_IF_ERROR(Await(comm, work));
  const absl::Time start = absl::Now();
  absl::Status s = work->Wait(timeout_);
  comm_wait_seconds_ += absl::ToDoubleSeconds(absl::Now() - start);
  return s;
}

absl::Status ShardedModel::OnHost(
    const std::function<std::shared_ptr<comm::Work>()>& collective) {
  const absl::Time start = absl::Now();
  absl::Status s = collective()->Wait(timeout_);
  comm_wait_seconds_ += absl::ToDoubleSeconds(absl::Now() - start);
  return s;
}

absl::StatusOr<std::vector<double>> ShardedModel::AllGatherDouble(comm::Communicator& host_comm,
                                                                  double value) {
  // A double travels through an f32 all-gather as its two 32-bit halves (a bit copy).
  constexpr size_t kDoubleAsFloats = sizeof(double) / sizeof(float);
  std::vector<double> all(host_comm.size());
  ACCEL_RETURN_IF_ERROR(OnHost([&] {
    return host_comm.AllGather(&value, all.data(), kDoubleAsFloats, DType::kF32);
  }));
  return all;
}

// ---- parameters -----------------------------------------------------------------------------

absl::Status ShardedModel::IssueGather(int u) {
  Unit& unit = units_[u];
  const UnitShard& us = plan_.unit(u);
  // Every element is overwritten by the gather: no need to zero.
  ACCEL_ASSIGN_OR_RETURN(unit.full, ops_->Acquire(us.padded_numel * param_size(),
                                                  MemoryCategory::kParams, /*zero=*/false));
  const void* send = unit.shard.data();
  if (plan_.options().offload_params && us.shard_numel > 0) {
    // The host shard comes to the device first: into this rank's slot of the gathered unit.
    char* mine = unit.full.as<char>() + groups_.shard->rank() * us.shard_numel * param_size();
    ACCEL_RETURN_IF_ERROR(FromOptimizer(mine, send, us.shard_numel * param_size()));
    send = mine;
  }
  ACCEL_RETURN_IF_ERROR(ops_->BeforeCollective(*groups_.shard));
  unit.gather = groups_.shard->AllGather(send, unit.full.data(), us.shard_numel,
                                         plan_.options().param_dtype);
  return absl::OkStatus();
}

absl::Status ShardedModel::EnsureGathered(int u) {
  Unit& unit = units_[u];
  if (unit.gathered) return absl::OkStatus();
  if (!unit.gather) ACCEL_RETURN_IF_ERROR(IssueGather(u));
  absl::Status s = Await(*groups_.shard, unit.gather);
  unit.gather.reset();
  ACCEL_RETURN_IF_ERROR(s);
  unit.gathered = true;
  if (u == 0 || plan_.unit(u).numel <= plan_.options().param_persistence_threshold) {
    unit.keep_for_step = true;  // the root serves both ends of the step; small units persist
  }
  return absl::OkStatus();
}

void ShardedModel::MaybeFree(int u) {
  Unit& unit = units_[u];
  if (plan_.params_persistent() || unit.keep_for_step || unit.keep_for_reuse || unit.gather) {
    return;
  }
  ops_->Recycle(std::move(unit.full));
  unit.gathered = false;
}

void ShardedModel::ReleaseCompute(int u) { ops_->Recycle(std::move(units_[u].compute)); }

absl::StatusOr<const float*> ShardedModel::Params(int u, Pass pass) {
  if (!plan_.params_persistent()) {
    ACCEL_RETURN_IF_ERROR(EnsureGathered(u));
    ACCEL_RETURN_IF_ERROR(pass == Pass::kForward ? PrefetchForward(u) : PrefetchBackward(u));
  }
  Unit& unit = units_[u];
  if (!mixed_) return unit.full.as<float>();
  if (unit.compute.empty()) {
    const int64_t n = plan_.unit(u).padded_numel;
    ACCEL_ASSIGN_OR_RETURN(unit.compute, ops_->Acquire(n * sizeof(float),
                                                       MemoryCategory::kParams, false));
    const DType dtype = plan_.options().param_dtype;
    const bool skip = dtype == DType::kBF16 && static_cast<size_t>(u) < skip_fp32_.size();
    int64_t next = 0;  // converts the complement of the skipped ranges
    auto convert_to = [&](int64_t end) {
      return ops_->Convert(unit.full.as<uint16_t>() + next, dtype,
                           unit.compute.as<float>() + next, DType::kF32, end - next);
    };
    if (skip) {
      for (const auto& [offset, numel] : skip_fp32_[u]) {
        ACCEL_RETURN_IF_ERROR(convert_to(offset));
        next = offset + numel;
      }
    }
    ACCEL_RETURN_IF_ERROR(convert_to(n));
  }
  return unit.compute.as<float>();
}

const uint16_t* ShardedModel::ParamsBf16(int u) {
  if (plan_.options().param_dtype != DType::kBF16 || units_[u].full.empty()) return nullptr;
  return units_[u].full.as<uint16_t>();
}

absl::Status ShardedModel::Release(int u, Pass pass) {
  // The root serves both ends of each pass: its fp32 copy lives until FinishStep.
  if (mixed_ && u != 0) ReleaseCompute(u);
  if (plan_.params_persistent()) return absl::OkStatus();
  if (pass == Pass::kForward) {
    if (u != 0 && plan_.options().reshard_after_forward) {
      const int64_t reuse = plan_.options().max_reuse_distance;
      units_[u].keep_for_reuse = reuse > 0 && ReuseDistanceAfterForward(u) <= reuse;
      MaybeFree(u);
    }
    return absl::OkStatus();
  }
  units_[u].keep_for_reuse = false;
  if (u != 0) MaybeFree(u);
  if (plan_.options().backward_prefetch == BackwardPrefetch::kBackwardPost) {
    ACCEL_RETURN_IF_ERROR(Prefetch(NextInBackward(u)));
  }
  return absl::OkStatus();
}

}  // namespace accel::shard
