// Loading --init-weights on a gang (ranks as threads over real gloo): the default path,
// sync_module_states, cpu_ram_efficient_loading and zero3_init give bit-identical parameters,
// and the host "other" memory a rank needs for the load (what the ledger records) is the whole
// model in the first two modes but at most one unit on ranks != 0 in the efficient ones.
#include <string>
#include <unistd.h>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "engine/checkpoint/hf_weights.h"
#include "engine/kernels/threading.h"
#include "engine/model/gpt2_config.h"
#include "engine/testing/random.h"
#include "engine/train/trainer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/sharding/rank_threads.h"

namespace accel::testing {
namespace {

using shard::Strategy;
using ::testing::HasSubstr;

struct RankLoad {
  std::vector<float> params;  // gathered after Create
  int64_t other_peak = 0;     // host / other bytes, peak during Create
};

class EfficientLoadingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kernels::SetNumThreads(1);
    dir_ = ::testing::TempDir() + "/efficient_loading_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_).ok());
    std::string text;
    for (int i = 0; i < 2000; ++i) text += static_cast<char>('a' + (i * 7 + i / 13) % 26);
    ASSERT_TRUE(WriteFileAtomic(Env::Default(), dir_ + "/data.txt", text).ok());
    config_ = {"el", 4, 4, 32, 256, 16};
    ASSERT_TRUE(WriteFileAtomic(Env::Default(), dir_ + "/config.json",
                                model::Gpt2ConfigToJson(config_)).ok());
    auto layout = model::ModelLayout::Create(config_);
    ASSERT_TRUE(layout.ok());
    layout_ = std::make_unique<model::ModelLayout>(std::move(*layout));
    // A bf16 file, so every mode converts on the way in.
    TestRng rng(11);
    std::vector<float> values = rng.NormalVector(layout_->num_params());
    weights_ = dir_ + "/init/model.safetensors";
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_ + "/init").ok());
    ASSERT_TRUE(checkpoint::SaveHfWeights(Env::Default(), weights_, *layout_, values.data(),
                                              DType::kBF16).ok());
    expected_.resize(layout_->num_params());
    ASSERT_TRUE(checkpoint::LoadHfWeights(Env::Default(), weights_, *layout_,
                                              expected_.data()).ok());
    for (int u = 0; u < layout_->num_units(); ++u) {
      largest_unit_ = std::max(largest_unit_, layout_->unit(u).numel);
    }
  }
  void TearDown() override { (void)Env::Default()->DeleteRecursively(dir_); }

  train::TrainOptions Options(Strategy s) {
    train::TrainOptions o;
    o.model_config = dir_ + "/config.json";
    o.data = dir_ + "/data.txt";
    o.batch = 2;
    o.seq = 8;
    o.steps = 0;
    o.init_weights = weights_;
    o.shard.strategy = s;
    return o;
  }

  // Creates a trainer on every rank and returns what each loaded, or the first error.
  absl::StatusOr<std::vector<RankLoad>> Load(const train::TrainOptions& o, int world,
                                             std::vector<absl::Status>* statuses = nullptr) {
    std::vector<RankLoad> loads(world);
    std::vector<absl::Status> s =
        RunOnRanks(world, o.shard, absl::Seconds(20), [&](int rank, shard::ProcessGroups g) {
          MemoryLedger ledger;
          absl::StatusOr<std::unique_ptr<train::Trainer>> t =
              train::Trainer::Create(o, g, Env::Default(), &ledger);
          if (!t.ok()) return t.status();
          loads[rank].other_peak = ledger.Get(MemoryPool::kHost, MemoryCategory::kOther).peak;
          absl::StatusOr<std::vector<float>> p = (*t)->GatherParams();
          if (!p.ok()) return p.status();
          loads[rank].params = std::move(*p);
          return absl::OkStatus();
        });
    if (statuses != nullptr) *statuses = s;
    for (const absl::Status& st : s) {
      if (!st.ok()) return st;
    }
    return loads;
  }

  std::string dir_, weights_;
  model::Gpt2Config config_;
  std::unique_ptr<model::ModelLayout> layout_;
  std::vector<float> expected_;
  int64_t largest_unit_ = 0;
};

TEST_F(EfficientLoadingTest, EveryModeLoadsTheSameParameters) {
  for (Strategy s : {Strategy::kFullShard, Strategy::kNoShard, Strategy::kShardGradOp}) {
    for (int mode = 0; mode < 4; ++mode) {
      train::TrainOptions o = Options(s);
      o.sync_module_states = mode == 1;
      o.cpu_ram_efficient_loading = mode == 2;
      o.zero3_init = mode == 3;
      auto loads = Load(o, 3);
      ASSERT_TRUE(loads.ok()) << loads.status() << " strategy " << shard::StrategyName(s)
                              << " mode " << mode;
      for (int r = 0; r < 3; ++r) {
        ASSERT_EQ((*loads)[r].params, expected_)
            << "strategy " << shard::StrategyName(s) << " mode " << mode << " rank " << r;
      }
    }
  }
}

TEST_F(EfficientLoadingTest, EfficientModesHoldAtMostOneUnitOnOtherRanks) {
  const int world = 4;
  const int64_t full_bytes = layout_->num_params() * 4;
  const int64_t unit_bytes = (largest_unit_ + 1) * 4;  // + the status element
  ASSERT_LT(unit_bytes, full_bytes / 2);  // the model is big enough for the bound to mean something

  auto plain = Load(Options(Strategy::kFullShard), world);
  ASSERT_TRUE(plain.ok()) << plain.status();
  train::TrainOptions sync = Options(Strategy::kFullShard);
  sync.sync_module_states = true;
  auto synced = Load(sync, world);
  ASSERT_TRUE(synced.ok()) << synced.status();
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ((*plain)[r].other_peak, full_bytes) << r;
    EXPECT_EQ((*synced)[r].other_peak, full_bytes) << r;
  }

  train::TrainOptions efficient = Options(Strategy::kFullShard);
  efficient.sync_module_states = true;
  efficient.cpu_ram_efficient_loading = true;
  auto eff = Load(efficient, world);
  ASSERT_TRUE(eff.ok()) << eff.status();
  train::TrainOptions z3 = Options(Strategy::kFullShard);
  z3.zero3_init = true;
  auto zero3 = Load(z3, world);
  ASSERT_TRUE(zero3.ok()) << zero3.status();
  for (int r = 1; r < world; ++r) {
    EXPECT_GT((*eff)[r].other_peak, 0) << r;
    EXPECT_LE((*eff)[r].other_peak, unit_bytes) << r;
    // zero3_init: only this rank's quarter of a unit.
    EXPECT_GT((*zero3)[r].other_peak, 0) << r;
    EXPECT_LE((*zero3)[r].other_peak, (largest_unit_ / world + 1) * 4) << r;
  }
  // Rank 0 reads the file unit by unit too.
  EXPECT_LE((*eff)[0].other_peak, unit_bytes);
}

TEST_F(EfficientLoadingTest, SeededInitBroadcastUnitByUnitMatchesTheDefault) {
  train::TrainOptions o = Options(Strategy::kFullShard);
  o.init_weights.clear();
  auto plain = Load(o, 2);
  ASSERT_TRUE(plain.ok()) << plain.status();
  o.cpu_ram_efficient_loading = true;  // implies sync_module_states
  auto eff = Load(o, 2);
  ASSERT_TRUE(eff.ok()) << eff.status();
  EXPECT_EQ((*eff)[1].params, (*plain)[1].params);
  EXPECT_LE((*eff)[1].other_peak, (largest_unit_ + 1) * 4);
  // Rank 0 computes the seeded values unit by unit too (model::InitUnit).
  EXPECT_EQ((*eff)[0].other_peak, (largest_unit_ + 1) * 4);
  // And so does every rank of the default (no broadcast) seeded init.
  for (int r = 0; r < 2; ++r) EXPECT_EQ((*plain)[r].other_peak, largest_unit_ * 4) << r;
}

TEST_F(EfficientLoadingTest, ARank0ReadFailureFailsEveryRankWithoutHanging) {
  train::TrainOptions o = Options(Strategy::kFullShard);
  o.cpu_ram_efficient_loading = true;
  o.init_weights = dir_ + "/missing.safetensors";
  std::vector<absl::Status> statuses;
  EXPECT_FALSE(Load(o, 3, &statuses).ok());
  EXPECT_EQ(statuses[0].code(), absl::StatusCode::kNotFound) << statuses[0];
  for (int r = 1; r < 3; ++r) {
    EXPECT_EQ(statuses[r].code(), absl::StatusCode::kUnavailable) << statuses[r];
    EXPECT_THAT(statuses[r].message(), HasSubstr("rank 0 could not read"));
  }
}

}  // namespace
}  // namespace accel::testing
