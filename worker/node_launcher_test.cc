#include "worker/node_launcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace accel::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(NodeLauncherTest, KubernetesPodRunsItsNodesRanks) {
  auto ranks = NodeRankVars({{"JOB_COMPLETION_INDEX", "1"}, {"ACCEL_NODES", "3"},
                             {"ACCEL_RANKS_PER_NODE", "2"}, {"MASTER_ADDR", "job-0.svc"}},
                            2);
  ASSERT_TRUE(ranks.ok()) << ranks.status();
  ASSERT_EQ(ranks->size(), 2u);
  const LaunchVars& r1 = (*ranks)[1];
  EXPECT_EQ(r1.at("RANK"), "3");
  EXPECT_EQ(r1.at("LOCAL_RANK"), "1");
  EXPECT_EQ(r1.at("WORLD_SIZE"), "6");
  EXPECT_EQ(r1.at("LOCAL_WORLD_SIZE"), "2");
  EXPECT_EQ(r1.at("GROUP_RANK"), "1");
  EXPECT_EQ(r1.at("MASTER_ADDR"), "job-0.svc");
  EXPECT_EQ(r1.at("MASTER_PORT"), "29500");
  // What each rank then resolves: torchrun's variables, the same place.
  LaunchVars child = {{"JOB_COMPLETION_INDEX", "1"}, {"ACCEL_NODES", "3"}};
  child.insert(r1.begin(), r1.end());
  auto e = ResolveLaunchEnv(child);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->source, "torchrun");
  EXPECT_EQ(e->rank, 3);
  EXPECT_EQ(e->node_rank, 1);
  EXPECT_EQ(e->num_nodes, 3);
}

TEST(NodeLauncherTest, OneSlurmTaskPerNodeAndASingleNode) {
  auto ranks = NodeRankVars({{"SLURM_PROCID", "1"}, {"SLURM_LOCALID", "0"},
                             {"SLURM_NTASKS", "2"}, {"SLURM_NODEID", "1"},
                             {"SLURM_NNODES", "2"}, {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"},
                             {"SLURM_STEP_NODELIST", "n[1-2]"}},
                            4);
  ASSERT_TRUE(ranks.ok()) << ranks.status();
  EXPECT_EQ((*ranks)[0].at("RANK"), "4");
  EXPECT_EQ((*ranks)[3].at("RANK"), "7");
  EXPECT_EQ((*ranks)[3].at("WORLD_SIZE"), "8");
  EXPECT_EQ((*ranks)[3].at("MASTER_ADDR"), "n1");
  auto single = NodeRankVars({}, 2);
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_EQ((*single)[1].at("RANK"), "1");
  EXPECT_EQ((*single)[1].at("WORLD_SIZE"), "2");
  EXPECT_FALSE((*single)[1].contains("MASTER_ADDR"));
}

TEST(NodeLauncherTest, Refusals) {
  EXPECT_THAT(NodeRankVars({{"RANK", "0"}, {"WORLD_SIZE", "2"}}, 2).status().message(),
              HasSubstr("RANK=0 is set, so this process is one rank already"));
  EXPECT_THAT(NodeRankVars({{"JOB_COMPLETION_INDEX", "0"}, {"ACCEL_NODES", "2"},
                            {"ACCEL_RANKS_PER_NODE", "4"}},
                           2)
                  .status()
                  .message(),
              HasSubstr("--nproc-per-node 2 but ACCEL_RANKS_PER_NODE is 4"));
  EXPECT_THAT(NodeRankVars({{"SLURM_PROCID", "0"}, {"SLURM_LOCALID", "0"},
                            {"SLURM_NTASKS", "4"}, {"SLURM_NODEID", "0"},
                            {"SLURM_NNODES", "2"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}},
                           2)
                  .status()
                  .message(),
              HasSubstr("Slurm runs 2 tasks on this node"));
  EXPECT_THAT(NodeRankVars({}, 0).status().message(), HasSubstr("is below 1"));
}

TEST(NodeLauncherTest, RankArgvDropsTheFlag) {
  EXPECT_THAT(RankArgv({"w", "--standalone", "--nproc-per-node", "2", "--steps", "3"}),
              ElementsAre("w", "--standalone", "--steps", "3"));
  EXPECT_THAT(RankArgv({"w", "--nproc-per-node=2", "--standalone"}),
              ElementsAre("w", "--standalone"));
}

}  // namespace
}  // namespace accel::worker
