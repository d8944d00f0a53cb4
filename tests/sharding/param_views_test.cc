// use_orig_params: under every strategy each named parameter is addressable as a view into the
// flat storage a rank updates; the ranks' views tile each parameter exactly once (or, without
// sharded optimizer state, each rank sees it whole), hold the gathered values, and write
// through.
#include <unistd.h>

#include <map>
#include <mutex>
#include <string>

#include "engine/kernels/threading.h"
#include "engine/model/gpt2_config.h"
#include "engine/train/trainer.h"
#include "gtest/gtest.h"
#include "tests/sharding/rank_threads.h"

namespace accel::testing {
namespace {

using shard::Strategy;

class ParamViewsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kernels::SetNumThreads(1);
    dir_ = ::testing::TempDir() + "/param_views_" + std::to_string(::getpid());
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_).ok());
    std::string text;
    for (int i = 0; i < 2000; ++i) text += static_cast<char>('a' + (i * 5 + i / 11) % 26);
    ASSERT_TRUE(WriteFileAtomic(Env::Default(), dir_ + "/data.txt", text).ok());
    model::Gpt2Config c{"views", 2, 4, 20, 256, 16};
    ASSERT_TRUE(
        WriteFileAtomic(Env::Default(), dir_ + "/config.json", model::Gpt2ConfigToJson(c)).ok());
  }
  void TearDown() override { (void)Env::Default()->DeleteRecursively(dir_); }
  std::string dir_;
};

TEST_F(ParamViewsTest, ViewsTileEveryParameterHoldItsValuesAndWriteThrough) {
  for (Strategy s : {Strategy::kNoShard, Strategy::kShardOptimizer, Strategy::kFullShard}) {
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      train::TrainOptions o;
      o.model_config = dir_ + "/config.json";
      o.data = dir_ + "/data.txt";
      o.batch = 2;
      o.seq = 8;
      o.steps = 2;
      o.shard.strategy = s;
      o.shard.param_dtype = o.shard.reduce_dtype = dtype;
      const int world = 3;
      std::mutex mu;
      std::map<std::string, int64_t> covered;  // elements seen over all ranks, per name
      std::map<std::string, int64_t> numel;
      std::vector<float> gathered, after_write;
      const std::string what =
          std::string(shard::StrategyName(s)) + " " + std::string(DTypeName(dtype));
      std::vector<absl::Status> statuses = RunOnRanks(
          world, o.shard, absl::Seconds(30), [&](int rank, shard::ProcessGroups g) -> absl::Status {
            MemoryLedger ledger;
            auto t = train::Trainer::Create(o, g, Env::Default(), &ledger);
            if (!t.ok()) return t.status();
            train::Trainer& trainer = **t;
            if (auto st = trainer.Train(nullptr); !st.ok()) return st;
            auto full = trainer.GatherParams();
            if (!full.ok()) return full.status();
            std::vector<shard::ParamView> views = trainer.NamedParameters();
            int64_t ln_f_offset = -1;
            {
              std::lock_guard<std::mutex> lock(mu);
              if (rank == 0) gathered = *full;
              EXPECT_EQ(views.size(), trainer.layout().flat().entries().size());
              for (const shard::ParamView& v : views) {
                EXPECT_LE(0, v.begin);
                EXPECT_LE(v.begin, v.end);
                EXPECT_LE(v.end, v.entry->numel);
                covered[v.entry->name] += v.end - v.begin;
                numel[v.entry->name] = v.entry->numel;
                for (int64_t i = v.begin; i < v.end; ++i) {
                  EXPECT_EQ(v.data[i - v.begin], (*full)[v.entry->offset + i])
                      << what << " " << v.entry->name << "[" << i << "]";
                }
                // Write through: the first held element of ln_f.weight becomes 7.
                if (v.entry->name == "ln_f.weight") {
                  ln_f_offset = v.entry->offset;
                  if (v.end > v.begin && v.begin == 0) v.data[0] = 7.0f;
                }
              }
            }
            // Gathering reads what the views wrote (zero1 in fp32 keeps full replicas that
            // only FinishStep refreshes, so there only the writer's own copy changed).
            auto again = trainer.GatherParams();
            if (!again.ok()) return again.status();
            const bool replicated = s == Strategy::kShardOptimizer && dtype == DType::kF32;
            if (rank == 0 && !replicated) {
              EXPECT_EQ((*again)[ln_f_offset], 7.0f) << what;
            }
            return absl::OkStatus();
          });
      for (int r = 0; r < world; ++r) ASSERT_TRUE(statuses[r].ok()) << what << statuses[r];
      for (const auto& [name, n] : covered) {
        EXPECT_EQ(n, s == Strategy::kNoShard ? world * numel[name] : numel[name])
            << what << " " << name;
      }
      EXPECT_FALSE(gathered.empty());
    }
  }
}

}  // namespace
}  // namespace accel::testing
