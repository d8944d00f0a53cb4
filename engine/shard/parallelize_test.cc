// Parallelize: each plan gets the parts it should, and the bytes they keep are the ZeRO
// formulas (one rank: Ψ padded elements; fp32 or bf16 mixed; offload moves the masters).
#include "engine/shard/parallelize.h"

#include "absl/strings/str_cat.h"
#include "engine/base/env.h"
#include "engine/comm/self_communicator.h"
#include "gtest/gtest.h"

namespace accel::shard {
namespace {

struct Kept {
  int64_t params, grads, optimizer, host_optimizer;
};

class ParallelizeTest : public ::testing::Test {
 protected:
  Kept Run(const ShardOptions& o) {
    MemoryLedger ledger;
    auto plan = ShardPlan::Create(*layout_, 1, 0, o);
    EXPECT_TRUE(plan.ok()) << plan.status();
    psi_ = plan->total_padded();
    auto parts = Parallelize(layout_.get(), std::move(*plan), {self_.get(), self_.get(), nullptr},
                             absl::Seconds(5), &ledger, nullptr);
    EXPECT_TRUE(parts.ok()) << parts.status();
    return {ledger.Get(MemoryPool::kDevice, MemoryCategory::kParams).current,
            ledger.Get(MemoryPool::kDevice, MemoryCategory::kGrads).current,
            ledger.Get(MemoryPool::kDevice, MemoryCategory::kOptimizerState).current,
            ledger.Get(MemoryPool::kHost, MemoryCategory::kOptimizerState).current};
  }
  std::unique_ptr<model::ModelLayout> layout_ = [] {
    auto l = model::ModelLayout::Create(model::Gpt2Config{"t", 2, 2, 6, 11, 7});
    return std::make_unique<model::ModelLayout>(std::move(*l));
  }();
  std::unique_ptr<comm::Communicator> self_ = comm::CreateSelfCommunicator();
  int64_t psi_ = 0;
};

TEST_F(ParallelizeTest, Fp32KeepsParametersAndGradientsAndNoMasters) {
  for (Strategy s : {Strategy::kNoShard, Strategy::kShardOptimizer, Strategy::kShardGradOp,
                     Strategy::kFullShard}) {
    ShardOptions o;
    o.strategy = s;
    const Kept k = Run(o);
    EXPECT_EQ(k.params, 4 * psi_) << StrategyName(s);
    EXPECT_EQ(k.grads, 4 * psi_) << StrategyName(s);
    EXPECT_EQ(k.optimizer, 0) << StrategyName(s);
  }
}

TEST_F(ParallelizeTest, MixedPrecisionKeeps16BitCopiesAndFp32Masters) {
  ShardOptions o;
  o.strategy = Strategy::kShardGradOp;
  o.param_dtype = o.reduce_dtype = DType::kBF16;
  const Kept k = Run(o);
  EXPECT_EQ(k.params, 2 * psi_);
  EXPECT_EQ(k.grads, 2 * psi_);
  EXPECT_EQ(k.optimizer, 4 * psi_);
  o.master_dtype = DType::kBF16;  // low precision: no masters
  EXPECT_EQ(Run(o).optimizer, 0);
}

TEST_F(ParallelizeTest, OffloadMovesTheMastersAndParameterShardsToTheHost) {
  ShardOptions o;
  o.strategy = Strategy::kFullShard;
  o.offload_optimizer = true;
  Kept k = Run(o);
  EXPECT_EQ(k.optimizer, 0);
  EXPECT_EQ(k.host_optimizer, 4 * psi_);
  EXPECT_EQ(k.params, 4 * psi_);
  o.offload_params = true;
  k = Run(o);
  EXPECT_EQ(k.params, 0);
}

// The storage is chosen once, in ApplyOffload: the parts see it through the context (memory,
// files, or the in-place behaviour without offload), and its count-only twin (the memory
// plan's) charges the nvme pool exactly as the real files do.
TEST_F(ParallelizeTest, ApplyOffloadChoosesTheStorageOnce) {
  ShardOptions o;
  o.strategy = Strategy::kFullShard;
  for (const std::string dir : {"", "offload", "nvme"}) {
    o.offload_optimizer = !dir.empty();
    o.offload_dir = dir == "nvme" ? ::testing::TempDir() : "";
    o.offload_tile_numel = 4096;
    auto plan = ShardPlan::Create(*layout_, 1, 0, o);
    ASSERT_TRUE(plan.ok());
    MemoryLedger ledger;
    auto parts = Parallelize(layout_.get(), std::move(*plan), {self_.get(), self_.get(), nullptr},
                             absl::Seconds(5), &ledger, nullptr);
    ASSERT_TRUE(parts.ok()) << parts.status();
    const offload::Storage& storage = parts->context->optimizer_storage();
    EXPECT_EQ(&storage == &offload::InPlace(), dir.empty()) << dir;
    EXPECT_EQ(storage.StreamsUpdate(), dir == "nvme") << dir;
    EXPECT_EQ(storage.PassTile(100000), dir == "nvme" ? 4096 : 100000) << dir;
    if (dir != "nvme") continue;
    MemoryLedger counted;
    absl::StatusOr<std::unique_ptr<offload::Storage>> twin =
        CreateOptimizerStorage(o, &counted, offload::Mode::kCountOnly);
    ASSERT_TRUE(twin.ok() && *twin != nullptr);
    EXPECT_TRUE((*twin)->StreamsUpdate());
    for (int u = 0; u < parts->context->num_units(); ++u) {  // MasterValues::Allocate
      ASSERT_TRUE((*twin)->Allocate(parts->context->optimizer_span(u).length * sizeof(float),
                                    MemoryCategory::kOptimizerState)
                      .ok());
    }
    EXPECT_EQ(counted.Get(MemoryPool::kNvme, MemoryCategory::kOptimizerState).current,
              ledger.Get(MemoryPool::kNvme, MemoryCategory::kOptimizerState).current);
    EXPECT_GT(counted.Get(MemoryPool::kNvme, MemoryCategory::kOptimizerState).current, 0);
  }
}

// Offloaded parameter shards share the optimizer's storage when they live in the same place,
// and get their own (CreateParamStorage) when offloaded alone or to another directory; its
// count-only twin charges the ledger as the real one does.
TEST_F(ParallelizeTest, ParametersGetTheirOwnStorageWhenApartFromTheOptimizer) {
  const std::string params_dir = ::testing::TempDir() + "/parallelize_params";
  ASSERT_TRUE(Env::Default()->CreateDirs(params_dir).ok());
  struct Case {
    bool optimizer;
    std::string optimizer_dir, param_dir;
    bool apart;
    MemoryPool params_pool;
  };
  const Case cases[] = {
      {true, "", "", false, MemoryPool::kHost},                          // both on the host
      {true, params_dir, params_dir, false, MemoryPool::kNvme},          // one directory
      {false, "", "", true, MemoryPool::kHost},                          // alone, host
      {false, "", params_dir, true, MemoryPool::kNvme},                  // alone, files
      {true, ::testing::TempDir(), params_dir, true, MemoryPool::kNvme},  // two directories
  };
  for (const Case& c : cases) {
    ShardOptions o;
    o.strategy = Strategy::kFullShard;
    o.offload_params = true;
    o.offload_optimizer = c.optimizer;
    o.offload_dir = c.optimizer_dir;
    o.offload_param_dir = c.param_dir;
    const std::string what = absl::StrCat(c.optimizer, " ", c.optimizer_dir, " ", c.param_dir);
    auto plan = ShardPlan::Create(*layout_, 1, 0, o);
    ASSERT_TRUE(plan.ok()) << what << plan.status();
    MemoryLedger ledger;
    auto parts = Parallelize(layout_.get(), std::move(*plan), {self_.get(), self_.get(), nullptr},
                             absl::Seconds(5), &ledger, nullptr);
    ASSERT_TRUE(parts.ok()) << what << parts.status();
    const ShardContext& ctx = *parts->context;
    EXPECT_TRUE(ctx.params_offloaded()) << what;
    EXPECT_EQ(ctx.params_apart(), c.apart) << what;
    EXPECT_EQ(&ctx.param_ops() == &ctx.optimizer_ops(), !c.apart) << what;
    EXPECT_EQ(ctx.optimizer_offloaded(), c.optimizer) << what;
    const int64_t psi = ctx.plan().total_padded();
    EXPECT_EQ(ledger.Get(c.params_pool, MemoryCategory::kParams).current, 4 * psi) << what;
    EXPECT_EQ(ledger.Get(MemoryPool::kDevice, MemoryCategory::kParams).current, 0) << what;
    MemoryLedger counted;
    auto twin = CreateParamStorage(o, &counted, offload::Mode::kCountOnly);
    ASSERT_TRUE(twin.ok()) << what;
    EXPECT_EQ(*twin != nullptr, c.apart) << what;
  }
}

TEST_F(ParallelizeTest, AnUnwritableOffloadDirectoryIsRefusedByName) {
  ShardOptions o;
  o.strategy = Strategy::kFullShard;
  o.offload_optimizer = true;
  o.offload_dir = "/nonexistent/accel-offload";
  auto plan = ShardPlan::Create(*layout_, 1, 0, o);
  ASSERT_TRUE(plan.ok());
  MemoryLedger ledger;
  auto parts = Parallelize(layout_.get(), std::move(*plan), {self_.get(), self_.get(), nullptr},
                           absl::Seconds(5), &ledger, nullptr);
  ASSERT_FALSE(parts.ok());
  EXPECT_EQ(parts.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(parts.status().message().find("/nonexistent/accel-offload"), std::string::npos);
}

}  // namespace
}  // namespace accel::shard
