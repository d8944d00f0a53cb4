// ParamStore on two gloo ranks: sharded parameters gather to exactly the loaded values and are
// freed after use (the root kept); resident ones all-gather updated slices; an offloaded home
// keeps the shards in its own pool.
#include "engine/shard/param_store.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/comm/gloo_test_util.h"
#include "gtest/gtest.h"

namespace accel::shard {
namespace {

using model::Pass;

const model::ModelLayout& Layout() {
  static const model::ModelLayout* layout = [] {
    auto l = model::ModelLayout::Create(model::Gpt2Config{"t", 2, 2, 6, 11, 7});  // odd sizes: padding matters
    return new model::ModelLayout(std::move(*l));
  }();
  return *layout;
}

std::vector<float> UnitValues(int u, int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(u * 1000 + i);
  return v;
}

absl::Status Check(bool ok, const std::string& what) {
  return ok ? absl::OkStatus() : absl::InternalError(what);
}

absl::Status LoadAll(ShardContext& ctx, ParamStore& store) {
  for (int u = 0; u < ctx.num_units(); ++u) {
    const std::vector<float> v = UnitValues(u, ctx.unit(u).numel);
    ACCEL_RETURN_IF_ERROR(store.Load(u, v.data() + store.HeldRange(u).first));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ShardContext>> Context(int rank, comm::Communicator& comm,
                                                      Strategy strategy, MemoryLedger* ledger) {
  ShardOptions o;
  o.strategy = strategy;
  ACCEL_ASSIGN_OR_RETURN(ShardPlan plan, ShardPlan::Create(Layout(), comm.size(), rank, o));
  return ShardContext::Create(&Layout(), std::move(plan), {&comm, &comm, nullptr},
                              absl::Seconds(20), ledger, nullptr);
}

TEST(ParamStoreTest, ShardedParamsGatherTheLoadedValuesAndFreeBlocksAfterUse) {
  absl::Status s = comm::testing::RunGroup(
      2, absl::Seconds(20), [](int rank, comm::Communicator& comm) -> absl::Status {
        MemoryLedger ledger;
        ACCEL_ASSIGN_OR_RETURN(auto ctx, Context(rank, comm, Strategy::kFullShard, &ledger));
        std::unique_ptr<ParamStore> store = CreateShardedParams(ctx.get(), &ctx->ops());
        ACCEL_RETURN_IF_ERROR(store->Allocate());
        store->SchedulePrefetch();
        ACCEL_RETURN_IF_ERROR(LoadAll(*ctx, *store));
        for (int u = 0; u < ctx->num_units(); ++u) {
          ACCEL_ASSIGN_OR_RETURN(const void* full, store->Use(u, Pass::kForward));
          const std::vector<float> want = UnitValues(u, ctx->unit(u).numel);
          const float* got = static_cast<const float*>(full);
          ACCEL_RETURN_IF_ERROR(Check(std::vector<float>(got, got + want.size()) == want,
                                      absl::StrCat("unit ", u, " gathered wrong values")));
          ACCEL_RETURN_IF_ERROR(store->Release(u, Pass::kForward));
        }
        ACCEL_RETURN_IF_ERROR(Check(store->gathered(0) != nullptr, "the root was freed"));
        ACCEL_RETURN_IF_ERROR(Check(store->gathered(1) == nullptr, "block 0 stayed gathered"));
        ACCEL_RETURN_IF_ERROR(store->SettleGathers());
        ACCEL_RETURN_IF_ERROR(store->AfterUpdate());
        return Check(store->gathered(0) == nullptr, "the root outlived the step");
      });
  EXPECT_TRUE(s.ok()) << s;
}

TEST(ParamStoreTest, ResidentParamsGatherEveryRanksUpdatedSlice) {
  absl::Status s = comm::testing::RunGroup(
      2, absl::Seconds(20), [](int rank, comm::Communicator& comm) -> absl::Status {
        MemoryLedger ledger;
        ACCEL_ASSIGN_OR_RETURN(auto ctx, Context(rank, comm, Strategy::kShardOptimizer, &ledger));
        std::unique_ptr<ParamStore> store = CreateResidentParams(ctx.get(), true);
        ACCEL_RETURN_IF_ERROR(store->Allocate());
        ACCEL_RETURN_IF_ERROR(LoadAll(*ctx, *store));
        for (int u = 0; u < ctx->num_units(); ++u) {  // "the optimizer": negate my slice
          float* mine = static_cast<float*>(store->OptimizerSpanParams(u).data);
          for (int64_t i = 0; i < ctx->unit(u).shard_valid; ++i) mine[i] = -mine[i];
        }
        ACCEL_RETURN_IF_ERROR(store->AfterUpdate());
        for (int u = 0; u < ctx->num_units(); ++u) {
          std::vector<float> want = UnitValues(u, ctx->unit(u).numel);
          for (float& x : want) x = -x;
          ACCEL_ASSIGN_OR_RETURN(const void* full, store->Use(u, Pass::kForward));
          const float* got = static_cast<const float*>(full);
          ACCEL_RETURN_IF_ERROR(Check(std::vector<float>(got, got + want.size()) == want,
                                      absl::StrCat("unit ", u, " missed a slice")));
        }
        return absl::OkStatus();
      });
  EXPECT_TRUE(s.ok()) << s;
}

TEST(ParamStoreTest, AnOffloadedHomeKeepsTheShardsInItsPool) {
  absl::Status s = comm::testing::RunGroup(
      2, absl::Seconds(20), [](int rank, comm::Communicator& comm) -> absl::Status {
        MemoryLedger ledger;
        ACCEL_ASSIGN_OR_RETURN(auto ctx, Context(rank, comm, Strategy::kFullShard, &ledger));
        std::unique_ptr<DeviceOps> host = CreateHostDeviceOps(&ledger, MemoryPool::kHost);
        std::unique_ptr<ParamStore> store = CreateShardedParams(ctx.get(), host.get());
        ACCEL_RETURN_IF_ERROR(store->Allocate());
        ACCEL_RETURN_IF_ERROR(LoadAll(*ctx, *store));
        int64_t shard_bytes = 0;
        for (int u = 0; u < ctx->num_units(); ++u) shard_bytes += ctx->unit(u).shard_numel * 4;
        ACCEL_RETURN_IF_ERROR(
            Check(ledger.Get(MemoryPool::kHost, MemoryCategory::kParams).current == shard_bytes &&
                      ledger.Get(MemoryPool::kDevice, MemoryCategory::kParams).current == 0,
                  "shards not in the host pool"));
        ACCEL_RETURN_IF_ERROR(
            Check(store->OptimizerSpanParams(1).on_host, "offloaded shards are host memory"));
        ACCEL_ASSIGN_OR_RETURN(const void* full, store->Use(1, Pass::kForward));
        const std::vector<float> want = UnitValues(1, ctx->unit(1).numel);
        const float* got = static_cast<const float*>(full);
        return Check(std::vector<float>(got, got + want.size()) == want, "gathered wrong");
      });
  EXPECT_TRUE(s.ok()) << s;
}

}  // namespace
}  // namespace accel::shard
