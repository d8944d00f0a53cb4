// Two machines simulated with network namespaces (netns.h), 2 ranks each, linked through a
// bridge over veths shaped to 1 Gbit/s (and 1 ms one way where the kernel has netem): standalone
// accel-worker processes started the torchrun way (RANK, LOCAL_RANK, WORLD_SIZE=4,
// LOCAL_WORLD_SIZE=2, GROUP_RANK, MASTER_ADDR = node 0's address). FULL_SHARD and HYBRID_SHARD
// (shard within a node, replicate across) each end with the same weights, byte for byte, as
// the same 4-rank job on one node over loopback, and every rank's cross-node bytes per step
// match the ring theory (shard::RingTrafficPerStep) within 1%. Needs root; skips otherwise.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "engine/base/env.h"
#include "engine/model/gpt2_config.h"
#include "engine/model/param_specs.h"
#include "engine/shard/ring_traffic.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/netns.h"
#include "tests/e2e/process.h"
#include "tests/e2e/standalone_gang.h"

namespace accel::testing {
namespace {

constexpr int kNodes = 2, kPerNode = 2, kWorld = kNodes * kPerNode, kSteps = 4;

struct JobResult {
  std::string weights;                  // the final model.safetensors, as bytes
  std::vector<nlohmann::json> records;  // rank 0's metrics lines
};

class MultinodeE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = NetnsLab::SkipReason(); !why.empty()) GTEST_SKIP() << why;
    dir_ = ::testing::TempDir() + "/multinode_e2e_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_).ok());
  }
  void TearDown() override {
    if (!dir_.empty()) (void)Env::Default()->DeleteRecursively(dir_);
  }

  // The 4-rank job; in `lab`'s namespaces (2 per node) or, with no lab, all on loopback.
  JobResult RunJob(const std::string& strategy, const NetnsLab* lab) {
    GangRun run;
    run.worker = ACCEL_WORKER_BIN;
    run.world = kWorld;
    run.ranks_per_node = kPerNode;
    run.lab = lab;
    run.dir = dir_;
    run.tag = strategy + (lab ? "_net" : "_local");
    const std::string weights = dir_ + "/" + run.tag + "/model.safetensors";
    run.flags = {"--model",        "gpt2-tiny", "--data",     ACCEL_DATA,
                 "--batch",        "2",         "--seq",      "32",
                 "--threads",      "1",         "--steps",    std::to_string(kSteps),
                 "--comm-timeout", "60",        "--strategy", strategy,
                 "--save-final",   weights};
    // Hybrid: shard within a node, replicate across nodes (FSDP's rule).
    if (strategy == "hybrid_shard") {
      run.flags.insert(run.flags.end(), {"--hybrid-group-size", std::to_string(kPerNode)});
    }
    JobResult result;
    absl::StatusOr<GangOutcome> out = RunStandaloneGang(run);
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return result;
    result.weights = ReadAll(weights);
    result.records = std::move(out->records);
    return result;
  }

  void ExpectOneNodeResultAndTheoryTraffic(const std::string& strategy) {
    auto lab = NetnsLab::Create(kNodes, LinkShape{"1gbit", "1ms"});
    ASSERT_TRUE(lab.ok()) << lab.status();
    const JobResult net = RunJob(strategy, lab->get());
    const JobResult local = RunJob(strategy, nullptr);
    ASSERT_FALSE(net.weights.empty());
    ASSERT_FALSE(local.weights.empty());
    EXPECT_TRUE(net.weights == local.weights)
        << strategy << ": final weights differ between 2 nodes and one";
    ASSERT_EQ(net.records.size(), static_cast<size_t>(kSteps));
    ASSERT_EQ(local.records.size(), static_cast<size_t>(kSteps));

    auto config = model::Gpt2Preset("gpt2-tiny");
    ASSERT_TRUE(config.ok());
    auto layout = model::ModelLayout::Create(*config);
    ASSERT_TRUE(layout.ok());
    shard::ShardOptions options;
    auto parsed = shard::ParseStrategy(strategy);
    ASSERT_TRUE(parsed.ok());
    options.strategy = *parsed;
    options.hybrid_group_size = kPerNode;
    const std::vector<int> nodes = shard::BlockPlacement(kWorld, kPerNode);
    // Steps from the third on: the first two also carry start-up and the first stats gather.
    for (int s = 2; s < kSteps; ++s) {
      const nlohmann::json& ranks = net.records[s]["ranks"];
      ASSERT_EQ(ranks.size(), static_cast<size_t>(kWorld));
      int64_t step_cross = 0;
      for (int r = 0; r < kWorld; ++r) {
        auto theory = shard::RingTrafficPerStep(*layout, options, kWorld, nodes, r);
        ASSERT_TRUE(theory.ok());
        const double cross = ranks[r]["bytes_sent_cross_node"].get<double>();
        const double sent = ranks[r]["bytes_sent"].get<double>();
        EXPECT_NEAR(sent, double(theory->sent), 0.01 * double(theory->sent))
            << strategy << " step " << s << " rank " << r;
        EXPECT_NEAR(cross, double(theory->sent_cross_node), 0.01 * double(theory->sent))
            << strategy << " step " << s << " rank " << r;
        step_cross += static_cast<int64_t>(cross);
        EXPECT_EQ(local.records[s]["ranks"][r]["bytes_sent_cross_node"].get<int64_t>(), 0);
      }
      auto all = shard::RingTrafficPerStepAllRanks(*layout, options, kWorld, nodes);
      ASSERT_TRUE(all.ok());
      EXPECT_NEAR(double(step_cross), double(all->sent_cross_node),
                  0.01 * double(all->sent_cross_node))
          << strategy << " step " << s;
      std::printf(
          "%s step %d: cross-node %lld B (theory %lld B); %.3f s/step on 2 nodes over "
          "\"%s\", %.3f s/step on one\n",
          strategy.c_str(), s, static_cast<long long>(step_cross),
          static_cast<long long>(all->sent_cross_node),
          net.records[s]["step_seconds"].get<double>(), (*lab)->applied().c_str(),
          local.records[s]["step_seconds"].get<double>());
    }
  }

  std::string dir_;
};

TEST_F(MultinodeE2eTest, FullShardOnTwoNodesMatchesOneNodeAndRingTheory) {
  ExpectOneNodeResultAndTheoryTraffic("full_shard");
}

TEST_F(MultinodeE2eTest, HybridShardOnTwoNodesMatchesOneNodeAndRingTheory) {
  ExpectOneNodeResultAndTheoryTraffic("hybrid_shard");
}

}  // namespace
}  // namespace accel::testing
