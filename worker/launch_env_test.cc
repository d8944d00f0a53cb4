#include "worker/launch_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "worker/daemon.h"
#include "worker/local_address.h"
#include "worker/slurm_lists.h"

namespace accel::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Error(const absl::StatusOr<LaunchEnv>& r) {
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : std::string(r.status().message());
}

// What srun gave task 3 of `srun -N2 --ntasks-per-node=2` (the reference's observed table).
LaunchVars SlurmTask3() {
  return {{"SLURM_PROCID", "3"},       {"SLURM_LOCALID", "1"},
          {"SLURM_NTASKS", "4"},       {"SLURM_NODEID", "1"},
          {"SLURM_NNODES", "2"},       {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
          {"SLURM_TASKS_PER_NODE", "2(x2)"}, {"SLURM_NTASKS_PER_NODE", "7"},
          {"SLURM_STEP_NODELIST", "n[1-2]"},  {"SLURM_JOB_NODELIST", "x[5-6]"}};
}

TEST(LaunchEnvTest, NothingIsOneProcess) {
  auto e = ResolveLaunchEnv({});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->source, "none");
  EXPECT_EQ(e->rank, 0);
  EXPECT_EQ(e->world_size, 1);
  EXPECT_EQ(e->master_port, 29500);
  EXPECT_EQ(e->master_addr, "");
}

TEST(LaunchEnvTest, Torchrun) {
  auto e = ResolveLaunchEnv({{"RANK", "5"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"},
                             {"LOCAL_WORLD_SIZE", "4"}, {"GROUP_RANK", "1"},
                             {"MASTER_ADDR", "h0"}, {"MASTER_PORT", "1234"},
                             {"SLURM_PROCID", "0"}});  // torchrun's win over Slurm's
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->source, "torchrun");
  EXPECT_EQ(e->rank, 5);
  EXPECT_EQ(e->local_rank, 1);
  EXPECT_EQ(e->world_size, 8);
  EXPECT_EQ(e->local_world_size, 4);
  EXPECT_EQ(e->node_rank, 1);
  EXPECT_EQ(e->num_nodes, 2);
  EXPECT_EQ(e->master_addr, "h0");
  EXPECT_EQ(e->master_port, 1234);
}

TEST(LaunchEnvTest, TorchrunByHandIsOneMachine) {
  auto e = ResolveLaunchEnv({{"RANK", "2"}, {"WORLD_SIZE", "3"}});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->local_world_size, 3);
  EXPECT_EQ(e->local_rank, 2);
  EXPECT_EQ(e->num_nodes, 1);
  EXPECT_EQ(e->node_rank, 0);
}

TEST(LaunchEnvTest, TorchrunErrorsNameTheVariable) {
  EXPECT_EQ(Error(ResolveLaunchEnv({{"RANK", "4"}, {"WORLD_SIZE", "4"}})),
            "RANK=4 is outside WORLD_SIZE=4");
  EXPECT_THAT(Error(ResolveLaunchEnv({{"RANK", "0"}})), HasSubstr("WORLD_SIZE is not set"));
  EXPECT_EQ(Error(ResolveLaunchEnv({{"RANK", "x1"}, {"WORLD_SIZE", "4"}})),
            "RANK=x1 is not an integer");
  EXPECT_EQ(Error(ResolveLaunchEnv(
                {{"RANK", "0"}, {"WORLD_SIZE", "5"}, {"LOCAL_WORLD_SIZE", "2"}})),
            "WORLD_SIZE=5 is not divisible by LOCAL_WORLD_SIZE=2");
  EXPECT_EQ(Error(ResolveLaunchEnv({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "0"}})),
            "MASTER_PORT=0 is not a port number (1-65535)");
}

TEST(LaunchEnvTest, SlurmTakesTheStepsTasksPerNodeAndTheFirstNode) {
  auto e = ResolveLaunchEnv(SlurmTask3());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->source, "slurm");
  EXPECT_EQ(e->rank, 3);
  EXPECT_EQ(e->local_rank, 1);
  EXPECT_EQ(e->world_size, 4);
  EXPECT_EQ(e->local_world_size, 2);  // not SLURM_NTASKS_PER_NODE's 7
  EXPECT_EQ(e->node_rank, 1);
  EXPECT_EQ(e->num_nodes, 2);
  EXPECT_EQ(e->master_addr, "n1");  // the step's node list, not the job's
  EXPECT_EQ(e->master_port, 29500);
}

TEST(LaunchEnvTest, SlurmFallsBackToTheJobsListsAndKeepsMasterAddr) {
  LaunchVars v = SlurmTask3();
  v.erase("SLURM_STEP_TASKS_PER_NODE");
  v.erase("SLURM_STEP_NODELIST");
  auto e = ResolveLaunchEnv(v);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->master_addr, "x5");
  v["MASTER_ADDR"] = "10.0.0.9";
  v["MASTER_PORT"] = "4000";
  e = ResolveLaunchEnv(v);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->master_addr, "10.0.0.9");
  EXPECT_EQ(e->master_port, 4000);
}

TEST(LaunchEnvTest, SlurmErrors) {
  LaunchVars v = SlurmTask3();
  v["SLURM_PROCID"] = "abc";
  EXPECT_EQ(Error(ResolveLaunchEnv(v)), "SLURM_PROCID=abc is not an integer");
  v = SlurmTask3();
  v["SLURM_PROCID"] = "4";
  EXPECT_EQ(Error(ResolveLaunchEnv(v)), "SLURM_PROCID=4 is outside SLURM_NTASKS=4");
  v = SlurmTask3();
  v["SLURM_STEP_TASKS_PER_NODE"] = "3,1";
  EXPECT_THAT(Error(ResolveLaunchEnv(v)),
              HasSubstr("SLURM_STEP_TASKS_PER_NODE=3,1 spreads the ranks unevenly"));
  v = SlurmTask3();
  v["SLURM_NTASKS"] = "5";
  v["SLURM_PROCID"] = "0";
  EXPECT_THAT(Error(ResolveLaunchEnv(v)), HasSubstr("SLURM_NTASKS=5 is not SLURM_NNODES=2 nodes"));
  v = SlurmTask3();
  v.erase("SLURM_LOCALID");
  EXPECT_THAT(Error(ResolveLaunchEnv(v)), HasSubstr("SLURM_LOCALID is not set"));
  v = SlurmTask3();
  v["SLURM_STEP_NODELIST"] = "n[1-2";
  EXPECT_EQ(Error(ResolveLaunchEnv(v)), "SLURM_STEP_NODELIST=n[1-2: unbalanced '['");
}

TEST(LaunchEnvTest, KubernetesIndexedJob) {
  auto e = ResolveLaunchEnv({{"JOB_COMPLETION_INDEX", "1"}, {"ACCEL_NODES", "3"},
                             {"ACCEL_RANKS_PER_NODE", "2"}, {"LOCAL_RANK", "1"},
                             {"MASTER_ADDR", "job-0.svc"}});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->source, "kubernetes");
  EXPECT_EQ(e->rank, 3);
  EXPECT_EQ(e->world_size, 6);
  EXPECT_EQ(e->node_rank, 1);
  EXPECT_EQ(e->local_world_size, 2);
  EXPECT_EQ(e->master_addr, "job-0.svc");
  EXPECT_EQ(Error(ResolveLaunchEnv({{"JOB_COMPLETION_INDEX", "3"}, {"ACCEL_NODES", "3"},
                                    {"ACCEL_RANKS_PER_NODE", "1"}})),
            "JOB_COMPLETION_INDEX=3 is outside ACCEL_NODES=3");
  EXPECT_THAT(Error(ResolveLaunchEnv({{"JOB_COMPLETION_INDEX", "0"}, {"ACCEL_NODES", "2"},
                                      {"ACCEL_RANKS_PER_NODE", "2"}})),
              HasSubstr("LOCAL_RANK is not set with ACCEL_RANKS_PER_NODE=2"));
  EXPECT_THAT(Error(ResolveLaunchEnv({{"JOB_COMPLETION_INDEX", "0"}})),
              HasSubstr("ACCEL_NODES is not set"));
}

MultiNodeKeys TwoMachines() {
  MultiNodeKeys k;
  k.file = "multi.yaml";
  k.num_processes = 4;
  k.num_machines = 2;
  k.machine_rank = 1;
  k.main_process_ip = "10.1.1.1";
  k.main_process_port = 29600;
  k.rdzv_backend = "c10d";
  return k;
}

TEST(LaunchEnvTest, AccelerateConfigMultiNodeKeys) {
  auto e = ResolveLaunchEnv({{"LOCAL_RANK", "1"}}, TwoMachines());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->source, "accelerate config");
  EXPECT_EQ(e->rank, 3);
  EXPECT_EQ(e->world_size, 4);
  EXPECT_EQ(e->node_rank, 1);
  EXPECT_EQ(e->local_world_size, 2);
  EXPECT_EQ(e->master_addr, "10.1.1.1");
  EXPECT_EQ(e->master_port, 29600);
  // A launcher's variables win over the file; one machine in the file is not a source.
  EXPECT_EQ(ResolveLaunchEnv(SlurmTask3(), TwoMachines())->source, "slurm");
  MultiNodeKeys one = TwoMachines();
  one.num_machines = 1;
  one.machine_rank = 0;
  EXPECT_EQ(ResolveLaunchEnv({}, one)->source, "none");
}

TEST(LaunchEnvTest, AccelerateConfigErrors) {
  MultiNodeKeys k = TwoMachines();
  k.rdzv_backend = "etcd";
  EXPECT_THAT(Error(ResolveLaunchEnv({}, k)), HasSubstr("multi.yaml: rdzv_backend: \"etcd\""));
  k = TwoMachines();
  k.num_processes = 3;
  EXPECT_EQ(Error(ResolveLaunchEnv({}, k)),
            "multi.yaml: num_processes 3 is not divisible by num_machines 2");
  k = TwoMachines();
  EXPECT_EQ(Error(ResolveLaunchEnv({{"LOCAL_RANK", "2"}}, k)),
            "LOCAL_RANK=2 is outside num_processes/num_machines=2");
}

TEST(SlurmListsTest, HostLists) {
  EXPECT_THAT(*ExpandHostList("n[1-2,5]", "L"), ElementsAre("n1", "n2", "n5"));
  EXPECT_THAT(*ExpandHostList("a1,b[01-03]", "L"), ElementsAre("a1", "b01", "b02", "b03"));
  EXPECT_THAT(*ExpandHostList("r[1-2]n[1-2]", "L"), ElementsAre("r1n1", "r1n2", "r2n1", "r2n2"));
  EXPECT_THAT(*ExpandHostList("gpu[9-10]-ib,login", "L"),
              ElementsAre("gpu9-ib", "gpu10-ib", "login"));
  EXPECT_THAT(*ExpandHostList("node7", "L"), ElementsAre("node7"));
  EXPECT_EQ(ExpandHostList("n[3-1]", "L").status().message(), "L=n[3-1]: bad range \"3-1\"");
  EXPECT_EQ(ExpandHostList("n]1", "L").status().message(), "L=n]1: unbalanced ']'");
  EXPECT_EQ(ExpandHostList("a,,b", "L").status().message(), "L=a,,b: empty host name");
  EXPECT_EQ(ExpandHostList("n[0-999999]", "L").status().message(),
            "L=n[0-999999]: more than 100000 hosts");
}

TEST(SlurmListsTest, TasksPerNode) {
  EXPECT_THAT(*ExpandTasksPerNode("2(x3),1", "T"), ElementsAre(2, 2, 2, 1));
  EXPECT_THAT(*ExpandTasksPerNode("4", "T"), ElementsAre(4));
  EXPECT_EQ(ExpandTasksPerNode("2(3)", "T").status().message(),
            "T=2(3): \"2(3)\" is not N or N(xM)");
  EXPECT_EQ(ExpandTasksPerNode("0", "T").status().message(), "T=0: \"0\" is not N or N(xM)");
}

LaunchVars Daemon(LaunchVars extra) {
  extra.insert({{"ACCEL_COORDINATOR", "10.0.0.1:7000"}, {"ACCEL_JOB_ID", "j1"},
                {"ACCEL_ATTEMPT", "2"}, {"ACCEL_WORKER_TOKEN", "t"}});
  return extra;
}

TEST(DaemonEnvTest, RankFromSlurmWhenAcceldSetsOnlyItsOwn) {
  auto e = DaemonEnvFromVars(Daemon(SlurmTask3()));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->rank, 3);
  EXPECT_EQ(e->world_size, 4);
  EXPECT_EQ(e->local_world_size, 2);
  EXPECT_EQ(e->launch_source, "slurm");
  EXPECT_EQ(e->attempt, 2);
  e = DaemonEnvFromVars(Daemon({{"RANK", "1"}, {"WORLD_SIZE", "2"}}));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->launch_source, "torchrun");
  EXPECT_THAT(DaemonEnvFromVars(Daemon({})).status().message(), HasSubstr("$RANK is not set"));
  EXPECT_THAT(DaemonEnvFromVars({{"RANK", "0"}}).status().message(),
              HasSubstr("$ACCEL_COORDINATOR is not set"));
}

TEST(LocalAddressTest, Targets) {
  EXPECT_EQ(SplitTarget("10.0.0.1:7000"), std::make_pair(std::string("10.0.0.1"), 7000));
  EXPECT_EQ(SplitTarget("[fe80::1]:80"), std::make_pair(std::string("fe80::1"), 80));
  EXPECT_EQ(SplitTarget("unix:/run/a.sock"), std::make_pair(std::string("localhost"), 0));
  EXPECT_TRUE(IsLoopbackHost("127.0.1.1"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
  EXPECT_EQ(*LocalAddressToward("localhost", 1, "X"), "127.0.0.1");
  EXPECT_THAT(LocalAddressToward("no-such-host.invalid", 1, "X").status().message(),
              HasSubstr("X: cannot resolve"));
}

}  // namespace
}  // namespace accel::worker
