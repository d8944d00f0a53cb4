#include "engine/shard/shard_context.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/shard/staged_communicator.h"

namespace accel::shard {

absl::StatusOr<std::unique_ptr<ShardContext>> ShardContext::Create(
    const model::ModelLayout* layout, ShardPlan plan, ProcessGroups groups, absl::Duration timeout,
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
    return absl::InvalidArgumentError(
        absl::StrCat("hybrid sharding needs a replicate "
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
  std::unique_ptr<ShardContext> c(new ShardContext(layout, std::move(plan), groups, timeout,
                                                   ledger ? ledger : MemoryLedger::Default()));
  if (ops == nullptr) {
    c->owned_ops_ = CreateHostDeviceOps(c->ledger_);
    ops = c->owned_ops_.get();
  }
  c->ops_ = ops;
  c->optimizer_ops_ = ops;
  c->param_ops_ = ops;
  c->host_world_ = groups.world;
  c->host_shard_ = groups.shard;
  if (!ops->host_addressable()) {
    c->staged_world_ = CreateStagedCommunicator(groups.world, ops, timeout);
    c->host_world_ = c->staged_world_.get();
    c->host_shard_ = c->host_world_;
    if (groups.shard != groups.world) {
      c->staged_shard_ = CreateStagedCommunicator(groups.shard, ops, timeout);
      c->host_shard_ = c->staged_shard_.get();
    }
  }
  return c;
}

OptimizerSpan ShardContext::optimizer_span(int u) const {
  const UnitShard& us = plan_.unit(u);
  if (!plan_.optimizer_sharded()) return {0, us.padded_numel};
  return {us.shard_begin, us.shard_numel};
}

void ShardContext::SetOptimizerStorage(std::unique_ptr<offload::Storage> storage) {
  optimizer_storage_ = storage.get();
  owned_optimizer_ops_ = CreateOffloadDeviceOps(ledger_, std::move(storage));
  optimizer_ops_ = owned_optimizer_ops_.get();
  if (ParamsWithOptimizer(options())) param_ops_ = optimizer_ops_;
}

void ShardContext::SetParamStorage(std::unique_ptr<offload::Storage> storage) {
  owned_param_ops_ = CreateOffloadDeviceOps(ledger_, std::move(storage));
  param_ops_ = owned_param_ops_.get();
}

absl::Status ShardContext::Await(comm::Communicator& comm,
                                 const std::shared_ptr<comm::Work>& work) {
  const absl::Time start = absl::Now();
  absl::Status s = ops_->AfterCollective(comm, work, timeout_);
  comm_wait_seconds_ += absl::ToDoubleSeconds(absl::Now() - start);
  return s;
}

absl::Status ShardContext::AwaitOnHost(comm::Communicator& comm,
                                       const std::shared_ptr<comm::Work>& work) {
  ACCEL_RETURN_IF_ERROR(Await(comm, work));
  const absl::Time start = absl::Now();
  absl::Status s = work->Wait(timeout_);
  comm_wait_seconds_ += absl::ToDoubleSeconds(absl::Now() - start);
  return s;
}

absl::Status ShardContext::OnHost(const std::function<std::shared_ptr<comm::Work>()>& collective) {
  const absl::Time start = absl::Now();
  absl::Status s = collective()->Wait(timeout_);
  comm_wait_seconds_ += absl::ToDoubleSeconds(absl::Now() - start);
  return s;
}

absl::StatusOr<std::vector<double>> ShardContext::AllGatherDouble(comm::Communicator& host_comm,
                                                                  double value) {
  // A double travels through an f32 all-gather as its two 32-bit halves (a bit copy).
  constexpr size_t kDoubleAsFloats = sizeof(double) / sizeof(float);
  std::vector<double> all(host_comm.size());
  ACCEL_RETURN_IF_ERROR(OnHost(
      [&] { return host_comm.AllGather(&value, all.data(), kDoubleAsFloats, DType::kF32); }));
  return all;
}

double ShardContext::TakeCommWaitSeconds() {
  const double s = comm_wait_seconds_ + ops_->TakeStreamWaitSeconds();
  comm_wait_seconds_ = 0;
  return s;
}

}  // namespace accel::shard
