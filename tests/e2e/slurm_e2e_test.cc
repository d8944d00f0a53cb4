// accel-worker under a real Slurm cluster (tests/e2e/slurm_cluster.h: munged, slurmctld and one
// slurmd per network namespace), no daemon: `srun -N2 --ntasks-per-node=K accel-worker
// --standalone ...` finds its rank, world and rank 0's address from Slurm's variables alone
// (worker/launch_env.h) and trains to the same final parameters as the same gang run locally,
// meeting in a directory. Nothing is left behind: no Slurm job, no process in the nodes, no
// daemon, namespace or /etc/hosts line. Needs root; skips with the one-line reason otherwise.
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/base/env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/process.h"
#include "tests/e2e/slurm_cluster.h"

namespace accel::testing {
namespace {

using ::testing::HasSubstr;

class SlurmE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = SlurmCluster::SkipReason(); !why.empty()) GTEST_SKIP() << why;
    dir_ = ::testing::TempDir() + "/slurm_e2e_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_).ok());
    cluster_ = std::make_unique<SlurmCluster>(dir_ + "/slurm");
    const absl::Status up = cluster_->Up(2, 2);
    ASSERT_TRUE(up.ok()) << up;
    for (int i = 0; i < cluster_->nodes(); ++i) {
      node_names_.push_back(cluster_->node_name(i));
      netns_paths_.push_back(cluster_->netns_path(i));
    }
  }

  void TearDown() override {
    if (cluster_ == nullptr) return;
    cluster_->Down();
    // Nothing left: no daemon or task of this test, no /etc/hosts line, no namespace.
    EXPECT_THAT(ProcessesMentioning(dir_), ::testing::IsEmpty());
    const std::string hosts = ReadAll("/etc/hosts");
    for (const std::string& node : node_names_) EXPECT_FALSE(absl::StrContains(hosts, node)) << node;
    for (const std::string& ns : netns_paths_) EXPECT_NE(::access(ns.c_str(), F_OK), 0) << ns;
    (void)Env::Default()->DeleteRecursively(dir_);
  }

  std::vector<std::string> Worker(const std::string& name, const std::string& strategy) {
    return {ACCEL_WORKER_BIN, "--standalone", "--model", "gpt2-tiny", "--data", ACCEL_DATA,
            "--batch", "2", "--seq", "32", "--threads", "1", "--steps", "4", "--comm-timeout",
            "60", "--strategy", strategy, "--metrics-out", dir_ + "/" + name + ".jsonl",
            "--save-final", dir_ + "/" + name + ".safetensors"};
  }

  // The same gang on this machine, meeting in a directory.
  void RunLocal(int world, const std::string& strategy, std::vector<std::string> extra = {}) {
    std::vector<ChildProcess> ranks;
    for (int r = 0; r < world; ++r) {
      std::vector<std::string> argv = Worker("local", strategy);
      argv.insert(argv.end(), {"--world-size", std::to_string(world), "--rank",
                               std::to_string(r), "--rdzv-dir", dir_ + "/rdzv"});
      argv.insert(argv.end(), extra.begin(), extra.end());
      ranks.push_back(StartProcess(argv, dir_, "local" + std::to_string(r)));
    }
    for (auto& c : ranks) ASSERT_EQ(WaitProcess(c, 300), 0) << ReadAll(c.stderr_path);
  }

  // srun across the cluster's two nodes; srun's output (every task's) is returned.
  std::string RunSlurm(int per_node, const std::string& strategy,
                       std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {"srun", "-N2", absl::StrCat("--ntasks-per-node=", per_node),
                                     "--kill-on-bad-exit=1"};
    const std::vector<std::string> worker = Worker("slurm", strategy);
    argv.insert(argv.end(), worker.begin(), worker.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    const SlurmCluster::Result r = cluster_->Client(argv, 300);
    EXPECT_EQ(r.status, 0) << r.output;
    // The step is over: the job leaves the queue (after COMPLETING, bounded) and no task or
    // slurmstepd stays in the nodes.
    for (int i = 0; i < 150 && !cluster_->Jobs().empty(); ++i) usleep(100 * 1000);
    EXPECT_THAT(cluster_->Jobs(), ::testing::IsEmpty());
    for (int i = 0; i < 100 && !cluster_->TaskProcesses().empty(); ++i) usleep(100 * 1000);
    EXPECT_THAT(cluster_->TaskProcesses(), ::testing::IsEmpty());
    return r.output;
  }

  std::vector<double> Losses(const std::string& name) {
    std::vector<double> losses;
    std::ifstream f(dir_ + "/" + name + ".jsonl");
    for (std::string line; std::getline(f, line);) {
      losses.push_back(nlohmann::json::parse(line)["loss"].get<double>());
    }
    return losses;
  }

  // Same losses at every step and the same final parameters, byte for byte.
  void ExpectSameTraining() {
    const std::vector<double> a = Losses("local"), b = Losses("slurm");
    ASSERT_EQ(a.size(), 4u);
    ASSERT_EQ(b.size(), 4u);
    for (int s = 0; s < 4; ++s) EXPECT_EQ(a[s], b[s]) << "step " << s;
    const std::string local = ReadAll(dir_ + "/local.safetensors");
    ASSERT_GT(local.size(), 1000u);
    EXPECT_TRUE(local == ReadAll(dir_ + "/slurm.safetensors")) << "final parameters differ";
  }

  std::string dir_;
  std::unique_ptr<SlurmCluster> cluster_;
  std::vector<std::string> node_names_, netns_paths_;
};

TEST_F(SlurmE2eTest, TwoNodesOneRankEachTrainLikeTheLocalGang) {
  RunLocal(2, "full_shard");
  const std::string out = RunSlurm(1, "full_shard");
  // Rank 0 says where it found its place: Slurm, rank 0's store at the first node's name.
  EXPECT_THAT(out, HasSubstr(absl::StrCat("rank 0 of 2 (node 0 of 2, local rank 0 of 1) from "
                                          "slurm; rank 0's store at ",
                                          cluster_->node_name(0), ":29500")));
  ExpectSameTraining();
}

TEST_F(SlurmE2eTest, TwoNodesTwoRanksEachTrainLikeTheLocalGang) {
  RunLocal(4, "full_shard");
  const std::string out = RunSlurm(2, "full_shard");
  EXPECT_THAT(out, HasSubstr("rank 0 of 4 (node 0 of 2, local rank 0 of 2) from slurm"));
  ExpectSameTraining();
}

// HYBRID_SHARD on 2 nodes x 2 ranks shards within a node (FSDP's rule): groups of 2, taken from
// the ranks per node Slurm gives, as the local gang's --hybrid-group-size 2.
TEST_F(SlurmE2eTest, HybridShardShardsWithinANode) {
  RunLocal(4, "hybrid_shard", {"--hybrid-group-size", "2"});
  const std::string out = RunSlurm(2, "hybrid_shard");
  EXPECT_THAT(out, HasSubstr("(hybrid group 2)"));
  ExpectSameTraining();
}

// One Slurm task per node running the node's ranks (accel-worker --nproc-per-node 2), as a
// site that gives whole nodes to one task does: the same 2 x 2 gang.
TEST_F(SlurmE2eTest, OneTaskPerNodeRunsTheNodesRanks) {
  RunLocal(4, "full_shard");
  const std::string out = RunSlurm(1, "full_shard", {"--nproc-per-node", "2"});
  EXPECT_THAT(out, HasSubstr(absl::StrCat("rank 0 of 4 (node 0 of 2, local rank 0 of 2) from "
                                          "torchrun; rank 0's store at ",
                                          cluster_->node_name(0), ":29500")));
  ExpectSameTraining();
}

}  // namespace
}  // namespace accel::testing
