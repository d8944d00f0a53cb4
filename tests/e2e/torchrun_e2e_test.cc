// accel-worker started the torchrun way: MASTER_ADDR / MASTER_PORT / RANK / WORLD_SIZE in the
// environment and no --rdzv-dir, rank 0 serving the rendezvous store; the plan taken from an
// Accelerate config (--config). Real processes, real gloo over 127.0.0.1.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/base/env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/process.h"

namespace accel::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class TorchrunE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/torchrun_e2e_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_).ok());
  }
  void TearDown() override { (void)Env::Default()->DeleteRecursively(dir_); }

  // `env` goes in front through /usr/bin/env, as a launcher would set it.
  std::vector<std::string> Worker(std::vector<std::string> env, std::vector<std::string> extra) {
    std::vector<std::string> argv = {"/usr/bin/env"};
    argv.insert(argv.end(), env.begin(), env.end());
    std::vector<std::string> worker = {ACCEL_WORKER_BIN, "--standalone", "--model", "gpt2-tiny",
                                       "--data", ACCEL_DATA, "--batch", "2", "--seq", "32",
                                       "--threads", "1", "--steps", "4", "--comm-timeout", "30"};
    argv.insert(argv.end(), worker.begin(), worker.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }
  std::string WriteConfig(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    EXPECT_TRUE(WriteFileAtomic(Env::Default(), path, text).ok());
    return path;
  }
  std::vector<double> Losses(const std::string& path) {
    std::vector<double> losses;
    std::ifstream f(path);
    for (std::string line; std::getline(f, line);) {
      losses.push_back(nlohmann::json::parse(line)["loss"].get<double>());
    }
    return losses;
  }
  // The reference gang: 2 ranks, full_shard by flags, meeting in a directory; rank 0's
  // metrics in dir.jsonl.
  void RunFullShardInDirectory() {
    std::vector<ChildProcess> ranks;
    for (int r = 0; r < 2; ++r) {
      ranks.push_back(StartProcess(
          Worker({}, {"--world-size", "2", "--rank", std::to_string(r), "--rdzv-dir",
                      dir_ + "/rdzv", "--strategy", "full_shard", "--metrics-out",
                      dir_ + "/dir.jsonl"}),
          dir_, "dir" + std::to_string(r)));
    }
    for (auto& c : ranks) ASSERT_EQ(WaitProcess(c, 120), 0) << ReadAll(c.stderr_path);
  }
  std::string dir_;
};

constexpr char kFullShard[] = R"(distributed_type: FSDP
mixed_precision: 'no'
num_processes: 2
fsdp_config:
  fsdp_sharding_strategy: FULL_SHARD
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_transformer_layer_cls_to_wrap: GPT2Block
  fsdp_backward_prefetch: BACKWARD_PRE
  fsdp_state_dict_type: SHARDED_STATE_DICT
)";

TEST_F(TorchrunE2eTest, TorchrunEnvAndConfigTrainLikeTheRdzvDirRun) {
  // Reference: the same strategy by flags, meeting in a directory.
  ASSERT_NO_FATAL_FAILURE(RunFullShardInDirectory());

  // torchrun's variables, the plan from the config; rank 1 starts before rank 0 listens.
  const std::string config = WriteConfig("fsdp.yaml", kFullShard);
  const int port = FreePort();
  ASSERT_GT(port, 0);
  std::vector<ChildProcess> ranks;
  for (int r : {1, 0}) {
    const std::string rank = std::to_string(r);
    ranks.push_back(StartProcess(
        Worker({"MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port), "RANK=" + rank,
                "WORLD_SIZE=2", "LOCAL_RANK=" + rank, "LOCAL_WORLD_SIZE=2"},
               {"--config", config, "--metrics-out", dir_ + "/env.jsonl", "--output", "json"}),
        dir_, "env" + rank));
    if (r == 1) usleep(300 * 1000);
  }
  for (auto& c : ranks) ASSERT_EQ(WaitProcess(c, 120), 0) << ReadAll(c.stderr_path);

  const std::vector<double> a = Losses(dir_ + "/dir.jsonl"), b = Losses(dir_ + "/env.jsonl");
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (int s = 0; s < 4; ++s) EXPECT_NEAR(a[s], b[s], 1e-6 * a[s]) << "step " << s;

  // Rank 0's first JSON line says what it resolved.
  std::istringstream out(ReadAll(dir_ + "/env0.out"));
  std::string first;
  ASSERT_TRUE(std::getline(out, first));
  auto mode = nlohmann::json::parse(first);
  EXPECT_EQ(mode["event"], "mode");
  EXPECT_EQ(mode["strategy"], "full_shard");
  EXPECT_EQ(mode["params"], "f32");
  EXPECT_EQ(mode["config"], config);
  EXPECT_EQ(ReadAll(dir_ + "/env1.out"), "");  // rank 0 speaks for the gang
}

// The launcher's count wins over the file's num_processes, as `accelerate launch
// --num_processes 1` does: a 2-process config runs on the one process torchrun's WORLD_SIZE
// says, and the mode record's notes name both counts.
TEST_F(TorchrunE2eTest, ConfigForAnotherWorldSizeRunsOnTheLaunchersCountNamingBoth) {
  const std::string config = WriteConfig("fsdp.yaml", kFullShard);
  ChildProcess c = StartProcess(
      Worker({"WORLD_SIZE=1", "RANK=0"}, {"--config", config, "--output", "json"}), dir_, "w");
  ASSERT_EQ(WaitProcess(c, 60), 0) << ReadAll(c.stderr_path);
  std::ifstream out(c.stdout_path);
  std::string first;
  ASSERT_TRUE(std::getline(out, first));
  const nlohmann::json mode = nlohmann::json::parse(first);
  EXPECT_EQ(mode["event"], "mode");
  EXPECT_EQ(mode["strategy"], "full_shard");
  EXPECT_THAT(mode["notes"].dump(),
              AllOf(HasSubstr("num_processes"), HasSubstr("the file says 2"),
                    HasSubstr("WORLD_SIZE says 1")));
}

TEST_F(TorchrunE2eTest, MissingRendezvousStoreFailsWithinTheTimeout) {
  // Rank 1 alone: nobody serves MASTER_PORT, so it gives up after --comm-timeout.
  const int port = FreePort();
  ChildProcess c = StartProcess(
      Worker({"MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port), "RANK=1",
              "WORLD_SIZE=2"},
             {"--comm-timeout", "2"}),
      dir_, "lonely");
  EXPECT_EQ(WaitProcess(c, 60), 1);
  EXPECT_THAT(ReadAll(c.stderr_path), HasSubstr("MASTER_ADDR:MASTER_PORT"));
}


// `accel-worker --nproc-per-node 2` as a Kubernetes pod runs it (one pod per node): the pod's
// completion index and shape give the ranks, which train like the rdzv-dir gang.
TEST_F(TorchrunE2eTest, NprocPerNodeRunsThePodsRanks) {
  ASSERT_NO_FATAL_FAILURE(RunFullShardInDirectory());
  const int port = FreePort();
  ASSERT_GT(port, 0);
  ChildProcess pod = StartProcess(
      Worker({"JOB_COMPLETION_INDEX=0", "ACCEL_NODES=1", "ACCEL_RANKS_PER_NODE=2",
              "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port)},
             {"--nproc-per-node", "2", "--strategy", "full_shard", "--metrics-out",
              dir_ + "/pod.jsonl"}),
      dir_, "pod");
  ASSERT_EQ(WaitProcess(pod, 120), 0) << ReadAll(pod.stderr_path);
  EXPECT_THAT(ReadAll(pod.stdout_path),
              HasSubstr("launch: rank 0 of 2 (node 0 of 1, local rank 0 of 2) from torchrun"));
  const std::vector<double> a = Losses(dir_ + "/dir.jsonl"), b = Losses(dir_ + "/pod.jsonl");
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (int s = 0; s < 4; ++s) EXPECT_EQ(a[s], b[s]) << "step " << s;
}

// When one rank fails the launcher stops the others at once (they would wait out
// --comm-timeout) and exits with the failure's code: rank 0 cannot serve the store on a port
// this test holds, rank 1 waits for it.
TEST_F(TorchrunE2eTest, NprocPerNodeStopsTheOthersWhenOneFails) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const auto start = std::chrono::steady_clock::now();
  ChildProcess pod = StartProcess(
      Worker({"MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(ntohs(addr.sin_port))},
             {"--nproc-per-node", "2", "--comm-timeout", "120", "--run-id", dir_}),
      dir_, "pod");
  EXPECT_EQ(WaitProcess(pod, 60), 1);
  close(fd);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(40));
  EXPECT_THAT(ReadAll(pod.stderr_path), HasSubstr("local rank 0 exited with code 1; stopping the other 1"));
  EXPECT_THAT(ProcessesMentioning(dir_), ::testing::IsEmpty());
}

// SIGTERM to the launcher reaches every rank; it exits with their code and leaves none.
TEST_F(TorchrunE2eTest, NprocPerNodeForwardsSigterm) {
  const int port = FreePort();
  ChildProcess pod = StartProcess(
      Worker({"MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port)},
             {"--nproc-per-node", "2", "--steps", "100000", "--run-id", dir_}),
      dir_, "pod");
  // Up to 30 s for three processes seen in 5 polls in a row: under load the ranks take seconds
  // to start, and a child between fork and exec still shows the launcher's command line.
  int seen = 0;
  for (int i = 0; i < 600 && seen < 5; ++i) {
    seen = ProcessesMentioning(dir_).size() == 3 ? seen + 1 : 0;
    usleep(50 * 1000);
  }
  ASSERT_EQ(ProcessesMentioning(dir_).size(), 3u);  // the launcher and its two ranks
  kill(pod.pid, SIGTERM);
  EXPECT_EQ(WaitProcess(pod, 30), 128 + SIGTERM);
  EXPECT_THAT(ProcessesMentioning(dir_), ::testing::IsEmpty());
}

}  // namespace
}  // namespace accel::testing
