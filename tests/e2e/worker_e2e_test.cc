// accel-worker as a user runs it: real processes, real files, real gloo between processes.
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
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

using ::testing::HasSubstr;

class WorkerE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/worker_e2e_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_).ok());
  }
  void TearDown() override { (void)Env::Default()->DeleteRecursively(dir_); }

  std::vector<std::string> Worker(std::vector<std::string> extra) {
    std::vector<std::string> argv = {ACCEL_WORKER_BIN, "--standalone", "--model", "gpt2-tiny",
                                     "--data", ACCEL_DATA, "--batch", "2", "--seq", "32",
                                     "--threads", "1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }
  // Runs to completion; returns {exit code, stderr}.
  std::pair<int, std::string> Run(std::vector<std::string> extra, const std::string& name = "w") {
    ChildProcess c = StartProcess(Worker(std::move(extra)), dir_, name);
    int code = WaitProcess(c, 120);
    return {code, ReadAll(c.stderr_path)};
  }
  std::vector<nlohmann::json> Metrics(const std::string& path) {
    std::vector<nlohmann::json> lines;
    std::ifstream f(path);
    for (std::string line; std::getline(f, line);) lines.push_back(nlohmann::json::parse(line));
    return lines;
  }
  std::string dir_;
};

TEST_F(WorkerE2eTest, BadInputIsOneLineNamingTheCulpritAndExitOne) {
  auto expect_error = [&](std::vector<std::string> args, const std::string& needle) {
    auto [code, err] = Run(args);
    EXPECT_EQ(code, 1) << err;
    EXPECT_THAT(err, HasSubstr(needle));
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  };
  expect_error({"--data", dir_ + "/missing.bin"}, "missing.bin");

  // An llm.c shard cut short: the error names the file and the sizes.
  std::string shard(1024, '\0');
  const int32_t header[3] = {20240520, 1, 1000};
  std::memcpy(shard.data(), header, sizeof(header));
  shard += std::string(100, '\1');
  ASSERT_TRUE(WriteFileAtomic(Env::Default(), dir_ + "/short.bin", shard).ok());
  expect_error({"--data", dir_ + "/short.bin"}, "short.bin");

  // A Llama 3 shard (magic 20240801, version 7, uint32 ids) holding an id past gpt2-tiny's
  // vocabulary: one line naming the file, the id and the vocab_size.
  std::string llama(1024, '\0');
  const int32_t llama_header[3] = {20240801, 7, 1000};
  std::memcpy(llama.data(), llama_header, sizeof(llama_header));
  std::vector<uint32_t> ids(1000, 65);
  ids[500] = 128255;
  llama.append(reinterpret_cast<const char*>(ids.data()), ids.size() * 4);
  ASSERT_TRUE(WriteFileAtomic(Env::Default(), dir_ + "/llama3.bin", llama).ok());
  expect_error({"--data", dir_ + "/llama3.bin"},
               "llama3.bin: token id 128255 (the largest in the file) is not below the model's "
               "vocab_size 256");

  std::string bad_magic(2048, '\0');
  bad_magic[0] = 1;
  bad_magic[1] = 2;
  ASSERT_TRUE(WriteFileAtomic(Env::Default(), dir_ + "/magic.safetensors", bad_magic).ok());
  expect_error({"--init-weights", dir_ + "/magic.safetensors"}, "magic.safetensors");

  expect_error({"--model", "gpt5"}, "gpt5");
  expect_error({"--world-size", "2", "--rank", "0"}, "--rdzv-dir");
  expect_error({"--strategy", "zero9"}, "zero9");
  expect_error({"--device", "tpu"}, "--device must be cpu or cuda");
  // Bad options are named before any device is looked for.
  expect_error({"--device", "cuda", "--grad-accum", "0"}, "--grad-accum");
  if (::access("/dev/nvidiactl", F_OK) != 0) {
    // No NVIDIA driver here (or no CUDA path built): a clear error, never a crash.
    auto [code, err] = Run({"--device", "cuda"});
    EXPECT_EQ(code, 1) << err;
    EXPECT_TRUE(err.find("no CUDA device") != std::string::npos ||
                err.find("built without the CUDA path") != std::string::npos)
        << err;
  }
}

TEST_F(WorkerE2eTest, SavedWeightsHaveHuggingFaceNamesAndTrainAgain) {
  auto [code, err] = Run({"--steps", "3", "--save-final", dir_ + "/m/model.safetensors"});
  ASSERT_EQ(code, 0) << err;
  // A model with a different shape refuses them, naming a tensor.
  auto [code2, err2] = Run({"--model", "gpt2-mini", "--init-weights", dir_ + "/m/model.safetensors",
                            "--steps", "1"}, "mismatch");
  EXPECT_EQ(code2, 1);
  EXPECT_THAT(err2, HasSubstr("wte.weight"));
  // The same shape continues from them (config.json came along).
  auto [code3, err3] = Run({"--model-config", dir_ + "/m/config.json", "--init-weights",
                            dir_ + "/m/model.safetensors", "--steps", "2", "--output", "json"},
                           "again");
  EXPECT_EQ(code3, 0) << err3;
  std::istringstream out(ReadAll(dir_ + "/again.out"));
  int lines = 0;
  for (std::string line; std::getline(out, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    if (j.contains("event")) continue;  // the startup "mode" line, checkpoint events
    ++lines;
    EXPECT_TRUE(j.contains("loss") && j.contains("tokens_per_s") && j.contains("grad_norm"));
  }
  EXPECT_EQ(lines, 2);
}

TEST_F(WorkerE2eTest, TwoProcessesMatchOneWithTheGlobalBatch) {
  auto [code, err] = Run({"--batch", "4", "--steps", "4", "--metrics-out", dir_ + "/one.jsonl"});
  ASSERT_EQ(code, 0) << err;
  std::vector<ChildProcess> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.push_back(StartProcess(
        Worker({"--steps", "4", "--world-size", "2", "--rank", std::to_string(r), "--rdzv-dir",
                dir_ + "/rdzv", "--strategy", "full_shard", "--metrics-out", dir_ + "/two.jsonl",
                "--comm-timeout", "30"}),
        dir_, "rank" + std::to_string(r)));
  }
  for (auto& c : ranks) EXPECT_EQ(WaitProcess(c, 120), 0) << ReadAll(c.stderr_path);
  auto one = Metrics(dir_ + "/one.jsonl"), two = Metrics(dir_ + "/two.jsonl");
  ASSERT_EQ(one.size(), 4u);
  ASSERT_EQ(two.size(), 4u);
  for (int s = 0; s < 4; ++s) {
    double a = one[s]["loss"], b = two[s]["loss"];
    EXPECT_NEAR(a, b, 1e-5 * a) << "step " << s;
  }
}

// --mixed-precision bf16 across two processes: the records carry every rank's memory (bf16
// parameter shards) and traffic, and the run tracks the fp32 one within bf16's precision.
TEST_F(WorkerE2eTest, Bf16MixedPrecisionRecordsEveryRanksMemoryAndTraffic) {
  auto run = [&](const std::string& name, const std::string& precision) {
    std::vector<ChildProcess> ranks;
    for (int r = 0; r < 2; ++r) {
      ranks.push_back(StartProcess(
          Worker({"--steps", "3", "--world-size", "2", "--rank", std::to_string(r), "--rdzv-dir",
                  dir_ + "/rdzv_" + name, "--strategy", "full_shard", "--mixed-precision",
                  precision, "--metrics-out", dir_ + "/" + name + ".jsonl", "--comm-timeout",
                  "30"}),
          dir_, name + std::to_string(r)));
    }
    for (auto& c : ranks) EXPECT_EQ(WaitProcess(c, 120), 0) << ReadAll(c.stderr_path);
    return Metrics(dir_ + "/" + name + ".jsonl");
  };
  auto fp32 = run("fp32", "no");
  auto bf16 = run("bf16", "bf16");
  ASSERT_EQ(fp32.size(), 3u);
  ASSERT_EQ(bf16.size(), 3u);
  for (int s = 0; s < 3; ++s) {
    double a = fp32[s]["loss"], b = bf16[s]["loss"];
    EXPECT_NEAR(a, b, 1e-2 * a) << "step " << s;
    ASSERT_TRUE(bf16[s].contains("ranks")) << bf16[s].dump();
    ASSERT_EQ(bf16[s]["ranks"].size(), 2u);
    for (int r = 0; r < 2; ++r) {
      const nlohmann::json& rank = bf16[s]["ranks"][r];
      EXPECT_EQ(rank["rank"], r);
      EXPECT_GT(rank["bytes_sent"].get<int64_t>(), 0);
      // Half the parameter bytes of the fp32 run: bf16 shards.
      const int64_t bf16_params = rank["memory"]["compute"]["params"]["current"];
      const int64_t fp32_params = fp32[s]["ranks"][r]["memory"]["compute"]["params"]["current"];
      EXPECT_EQ(2 * bf16_params, fp32_params) << "step " << s << " rank " << r;
    }
  }
}

// The shipped FSDP CPU-offload config across two processes: each rank's records show its
// parameters and optimizer state in the host pool and none in the compute pool, and the
// losses are those of the same full_shard run without offload, bit for bit.
TEST_F(WorkerE2eTest, TheFsdpOffloadConfigKeepsParametersAndOptimizerOnTheHost) {
  auto run = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<ChildProcess> ranks;
    for (int r = 0; r < 2; ++r) {
      std::vector<std::string> args = {"--steps", "3", "--world-size", "2", "--rank",
                                       std::to_string(r), "--rdzv-dir", dir_ + "/rdzv_" + name,
                                       "--metrics-out", dir_ + "/" + name + ".jsonl",
                                       "--comm-timeout", "30"};
      args.insert(args.end(), extra.begin(), extra.end());
      ranks.push_back(StartProcess(Worker(args), dir_, name + std::to_string(r)));
    }
    for (auto& c : ranks) EXPECT_EQ(WaitProcess(c, 120), 0) << ReadAll(c.stderr_path);
    return Metrics(dir_ + "/" + name + ".jsonl");
  };
  auto offload = run("offload", {"--config", std::string(ACCEL_CONFIGS) + "/fsdp_offload.yaml"});
  auto resident = run("resident", {"--strategy", "full_shard"});
  ASSERT_EQ(offload.size(), 3u);
  ASSERT_EQ(resident.size(), 3u);
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(offload[s]["loss"].get<double>(), resident[s]["loss"].get<double>()) << s;
    ASSERT_EQ(offload[s]["ranks"].size(), 2u);
    for (int r = 0; r < 2; ++r) {
      const nlohmann::json& memory = offload[s]["ranks"][r]["memory"];
      EXPECT_EQ(memory["compute"]["params"]["current"].get<int64_t>(), 0) << memory.dump();
      EXPECT_EQ(memory["compute"]["optimizer_state"]["current"].get<int64_t>(), 0);
      EXPECT_GT(memory["host"]["params"]["current"].get<int64_t>(), 0) << memory.dump();
      EXPECT_GT(memory["host"]["optimizer_state"]["current"].get<int64_t>(), 0);
    }
  }
}

// A config for 2 processes runs on one when the launcher says one (--world-size 1, or
// WORLD_SIZE=1), as `accelerate launch --num_processes 1` overrides the file; a warning names
// both counts.
TEST_F(WorkerE2eTest, TheLaunchersCountWinsOverTheConfigsNumProcesses) {
  const std::string config = std::string(ACCEL_CONFIGS) + "/fsdp_full_shard.yaml";
  for (const bool by_env : {false, true}) {
    std::vector<std::string> argv = Worker({"--steps", "2", "--config", config});
    if (by_env) {
      argv.insert(argv.begin(), {"/usr/bin/env", "WORLD_SIZE=1", "RANK=0"});
    } else {
      argv.insert(argv.end(), {"--world-size", "1"});
    }
    ChildProcess c = StartProcess(argv, dir_, by_env ? "env" : "flag");
    ASSERT_EQ(WaitProcess(c, 120), 0) << ReadAll(c.stderr_path) << ReadAll(c.stdout_path);
    const std::string out = ReadAll(c.stdout_path);
    EXPECT_THAT(out, HasSubstr("warning: "));
    EXPECT_THAT(out, HasSubstr("the file says 2"));
    EXPECT_THAT(out, HasSubstr(by_env ? "WORLD_SIZE says 1" : "--world-size says 1"));
    EXPECT_THAT(out, HasSubstr("mode: full_shard"));
    EXPECT_THAT(out, HasSubstr("step 2/2"));
  }
}

TEST_F(WorkerE2eTest, AKilledRankFailsTheOtherWithinTheDeadline) {
  std::vector<ChildProcess> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.push_back(StartProcess(
        Worker({"--steps", "100000", "--world-size", "2", "--rank", std::to_string(r),
                "--rdzv-dir", dir_ + "/rdzv", "--comm-timeout", "5", "--log-every", "1"}),
        dir_, "rank" + std::to_string(r)));
  }
  // Let them train a little, then kill rank 1 without warning.
  for (int i = 0; i < 200 && ReadAll(ranks[0].stdout_path).find("step") == std::string::npos; ++i) {
    usleep(50 * 1000);
  }
  ASSERT_EQ(kill(ranks[1].pid, SIGKILL), 0);
  EXPECT_EQ(WaitProcess(ranks[1], 10), 128 + SIGKILL);
  const int code = WaitProcess(ranks[0], 30);
  EXPECT_EQ(code, 1) << "rank 0 should fail, not hang";
  EXPECT_THAT(ReadAll(ranks[0].stderr_path), HasSubstr("error"));
}

}  // namespace
}  // namespace accel::testing
