// Lower(): the one lowering from config files and a job to engine options — resolution, the
// launcher's world, the plan applied, and every refusal the engine would make at start, each
// naming its file and key.
#include "engine/config/lower.h"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/config/batch_bounds.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::config {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;

TrainOptions Job() {
  TrainOptions job;
  job.model = "gpt2-tiny";
  job.data = "/data/unused.txt";  // not opened by the lowering
  job.batch = 4;
  job.steps = 10;
  return job;
}

LoweringInputs Inputs(std::string yaml, std::string json = "") {
  LoweringInputs in;
  in.job = Job();
  in.accelerate = {"acc.yaml", std::move(yaml)};
  if (!json.empty()) in.deepspeed = {"ds.json", std::move(json)};
  return in;
}

constexpr char kFullShard[] =
    "distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n"
    "  fsdp_sharding_strategy: FULL_SHARD\n";
constexpr char kDeepSpeed[] = "distributed_type: DEEPSPEED\nnum_processes: 2\n";

TEST(LowerTest, NoConfigRunsTheJobAsItIs) {
  LoweringInputs in;
  in.job = Job();
  in.job.shard.strategy = shard::Strategy::kShardGradOp;
  in.launcher_world = 3;
  auto lowered = Lower(in);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->options.shard.strategy, shard::Strategy::kShardGradOp);
  EXPECT_EQ(lowered->world_size, 3);
  EXPECT_FALSE(lowered->plan.has_value());
  EXPECT_EQ(lowered->source, "");
  EXPECT_EQ(lowered->model.num_layers(), 2);  // gpt2-tiny
}

TEST(LowerTest, FullShardConfigDecidesTheStrategyAndWorld) {
  auto lowered = Lower(Inputs(kFullShard));
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->options.shard.strategy, shard::Strategy::kFullShard);
  EXPECT_EQ(lowered->world_size, 2);
  EXPECT_EQ(lowered->source, "acc.yaml");
  ASSERT_TRUE(lowered->plan.has_value());
}

TEST(LowerTest, LauncherCountWinsOverTheFileWithAWarningNamingBoth) {
  LoweringInputs in = Inputs(kFullShard);
  in.launcher_world = 1;
  in.launcher_world_source = "WORLD_SIZE";
  auto lowered = Lower(in);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->world_size, 1);
  EXPECT_THAT(lowered->notes, Contains(AllOf(HasSubstr("num_processes"),
                                             HasSubstr("the file says 2"),
                                             HasSubstr("WORLD_SIZE says 1"))));
}

TEST(LowerTest, SgdInTheDeepSpeedJsonIsRefusedNamingFileAndKey) {
  auto lowered = Lower(Inputs(kDeepSpeed, R"({"zero_optimization": {"stage": 2},
      "optimizer": {"type": "SGD", "params": {"lr": 0.1}}})"));
  ASSERT_FALSE(lowered.ok());
  EXPECT_EQ(lowered.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(lowered.status().message()),
              AllOf(HasSubstr("ds.json: optimizer.type"), HasSubstr("SGD")));
}

// DeepSpeed runs offload_param without offload_optimizer (issue 32): so does this engine.
TEST(LowerTest, ParameterOffloadWithoutOptimizerOffloadRuns) {
  auto lowered = Lower(Inputs(kDeepSpeed, R"({"zero_optimization": {"stage": 3,
      "offload_param": {"device": "cpu"}}})"));
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_TRUE(lowered->options.shard.offload_params);
  EXPECT_FALSE(lowered->options.shard.offload_optimizer);
}

// Each NVMe directory is checked under its own key.
TEST(LowerTest, ParameterNvmePathThatIsAFileIsRefusedNamingItsKey) {
  const std::string file = ::testing::TempDir() + "/lower_test_param_not_a_dir";
  std::FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  auto lowered = Lower(Inputs(kDeepSpeed, R"({"zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "nvme", "nvme_path": ")" + ::testing::TempDir() + R"("},
      "offload_param": {"device": "nvme", "nvme_path": ")" + file + R"("}}})"));
  ASSERT_FALSE(lowered.ok());
  EXPECT_THAT(std::string(lowered.status().message()),
              AllOf(HasSubstr("zero_optimization.offload_param.nvme_path"), HasSubstr(file),
                    HasSubstr("not a directory")));
}

TEST(LowerTest, ParameterOffloadNeedsShardedParameters) {
  auto lowered = Lower(Inputs(kDeepSpeed, R"({"zero_optimization": {"stage": 2,
      "offload_param": {"device": "cpu"}, "offload_optimizer": {"device": "cpu"}}})"));
  ASSERT_FALSE(lowered.ok());
  EXPECT_THAT(std::string(lowered.status().message()),
              AllOf(HasSubstr("ds.json: zero_optimization.offload_param.device"),
                    HasSubstr("stage 3")));
}

TEST(LowerTest, NvmePathThatIsAFileIsRefusedNamingTheKey) {
  const std::string file = ::testing::TempDir() + "/lower_test_not_a_dir";
  std::FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  auto lowered = Lower(Inputs(kDeepSpeed, R"({"zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "nvme", "nvme_path": ")" + file + R"("}}})"));
  ASSERT_FALSE(lowered.ok());
  EXPECT_THAT(std::string(lowered.status().message()),
              AllOf(HasSubstr("zero_optimization.offload_optimizer.nvme_path"),
                    HasSubstr(file), HasSubstr("not a directory")));
}

TEST(LowerTest, NvmePathOnTmpfsIsRefusedNamingTheKey) {
  struct statfs fs;
  if (::statfs("/dev/shm", &fs) != 0 || fs.f_type != TMPFS_MAGIC) {
    GTEST_SKIP() << "no tmpfs at /dev/shm";
  }
  auto lowered = Lower(Inputs(kDeepSpeed, R"({"zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "nvme", "nvme_path": "/dev/shm"}}})"));
  ASSERT_FALSE(lowered.ok());
  EXPECT_THAT(std::string(lowered.status().message()),
              AllOf(HasSubstr("zero_optimization.offload_optimizer.nvme_path"),
                    HasSubstr("/dev/shm"), HasSubstr("tmpfs")));
}

TEST(LowerTest, NvmePathThatDoesNotExistYetIsCreatableUnderAWritableParent) {
  const std::string dir = ::testing::TempDir() + "/lower_test_nvme/deeper";
  LoweringInputs in = Inputs(kDeepSpeed, R"({"zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "nvme", "nvme_path": ")" + dir + R"("}}})");
  auto lowered = Lower(in);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->options.shard.offload_dir, dir);
  in.check_files = false;  // what a process on another host cannot check
  EXPECT_TRUE(Lower(in).ok());
}

TEST(LowerTest, HybridGroupThatDoesNotDivideTheWorldIsRefused) {
  LoweringInputs in = Inputs(
      "distributed_type: FSDP\nnum_processes: 4\nnum_machines: 2\nfsdp_config:\n"
      "  fsdp_sharding_strategy: HYBRID_SHARD\n");
  in.launcher_world = 3;
  in.launcher_world_source = "resources.num_processes";
  auto lowered = Lower(in);
  ASSERT_FALSE(lowered.ok());
  EXPECT_THAT(std::string(lowered.status().message()), HasSubstr("num_processes"));
}

// "Hybrid group = the ranks of one machine" is decided in Lower only (issue 29): the job file's
// resources.nodes and a launcher's node count reach it as launcher_machines.
TEST(LowerTest, HybridGroupWithoutASizeSpansOneMachine) {
  LoweringInputs in;
  in.job = Job();
  in.job.shard.strategy = shard::Strategy::kHybridShard;
  in.launcher_world = 4;
  in.launcher_machines = 2;
  auto lowered = Lower(in);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->options.shard.hybrid_group_size, 2);

  in.job.shard.hybrid_group_size = 4;  // the job's own group stands
  lowered = Lower(in);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->options.shard.hybrid_group_size, 4);

  in.job.shard.hybrid_group_size = 0;  // a config's group was resolved with the machine count
  in.accelerate = {"acc.yaml",
                   "distributed_type: FSDP\nnum_processes: 4\nnum_machines: 1\nfsdp_config:\n"
                   "  fsdp_sharding_strategy: HYBRID_SHARD\n"};
  lowered = Lower(in);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->options.shard.hybrid_group_size, 2);

  in = Inputs(kFullShard);  // not hybrid: no group
  in.launcher_machines = 2;
  lowered = Lower(in);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->options.shard.hybrid_group_size, 0);
}

TEST(LowerTest, EngineChecksNameTheJobValue) {
  LoweringInputs in = Inputs(kFullShard);
  in.job.seq = 0;
  auto lowered = Lower(in);
  ASSERT_FALSE(lowered.ok());
  EXPECT_THAT(std::string(lowered.status().message()), HasSubstr("--seq"));
  in = Inputs(kFullShard);
  in.job.model = "gpt2-nonexistent";
  lowered = Lower(in);
  ASSERT_FALSE(lowered.ok());
  EXPECT_THAT(std::string(lowered.status().message()), HasSubstr("model"));
}

// Issue 28: a micro-batch or accumulation of 2e9 reached the memory planner and the trainer. The
// lowering refuses it whether the job or a DeepSpeed file asks for it, naming where it came from.
TEST(LowerTest, MicroBatchAndAccumulationAboveTheirBoundsAreRefused) {
  LoweringInputs in;
  in.job = Job();
  in.job.batch = 2000000000;
  auto lowered = Lower(in);
  EXPECT_THAT(std::string(lowered.status().message()),
              HasSubstr("--batch (job key train.micro_batch) must be at most 1048576"));
  in.job = Job();
  in.job.grad_accum = 2000000000;
  lowered = Lower(in);
  EXPECT_THAT(std::string(lowered.status().message()),
              HasSubstr("--grad-accum (job key train.grad_accum) must be at most 1048576"));
  // A DeepSpeed file's micro-batch, given or derived from train_batch_size.
  auto deepspeed = [](const std::string& batch) {
    return Lower(Inputs(kDeepSpeed, R"({"zero_optimization": {"stage": 1}, )" + batch + "}"));
  };
  lowered = deepspeed(R"("train_micro_batch_size_per_gpu": 2000000000)");
  EXPECT_THAT(std::string(lowered.status().message()),
              AllOf(HasSubstr("train_micro_batch_size_per_gpu"), HasSubstr("1048576")));
  lowered = deepspeed(R"("train_batch_size": 4000000000)");
  EXPECT_THAT(std::string(lowered.status().message()),
              AllOf(HasSubstr("train_batch_size: gives a micro batch of 2000000000; at most "
                              "1048576")));
  lowered = deepspeed(R"("train_batch_size": 8)");
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  // Within the bound, but the model's activations for it are beyond counting (2^55 bytes per
  // sequence of 2^20 tokens): refused at submit, not left to overflow in the rank's plan.
  const std::string config = ::testing::TempDir() + "/huge_gpt2_config.json";
  FILE* f = std::fopen(config.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(R"({"model_type": "gpt2", "n_layer": 4096, "n_head": 1, "n_embd": 131072,)"
             R"( "vocab_size": 50257, "n_positions": 1048576})", f);
  std::fclose(f);
  in.job = Job();
  in.job.model_config = config;
  in.job.seq = 1 << 20;
  in.job.batch = kMaxMicroBatch;
  lowered = Lower(in);
  EXPECT_THAT(std::string(lowered.status().message()),
              AllOf(HasSubstr("train.micro_batch: micro-batch 1048576 x sequence 1048576"),
                    HasSubstr("more than 2^62 bytes")));
}

TEST(LowerTest, ASequenceLongerThanTheModelsContextIsRefused) {
  LoweringInputs in = Inputs(kFullShard);
  in.job.seq = 257;  // gpt2-tiny: n_positions 256
  auto lowered = Lower(in);
  ASSERT_FALSE(lowered.ok());
  EXPECT_THAT(std::string(lowered.status().message()),
              AllOf(HasSubstr("seq_len: 257"), HasSubstr("n_positions 256")));
}

TEST(LowerTest, DeepSpeedJsonAloneRunsOnTheLauncherCount) {
  LoweringInputs in;
  in.job = Job();
  in.deepspeed = {"ds.json", R"({"zero_optimization": {"stage": 1}})"};
  in.launcher_world = 3;
  auto lowered = Lower(in);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->options.shard.strategy, shard::Strategy::kShardOptimizer);
  EXPECT_EQ(lowered->world_size, 3);
  EXPECT_EQ(lowered->source, "ds.json");
}

TEST(LowerTest, JsonBesideANonDeepSpeedYamlIsRefused) {
  auto lowered = Lower(Inputs(kFullShard, R"({"zero_optimization": {"stage": 1}})"));
  ASSERT_FALSE(lowered.ok());
  EXPECT_THAT(std::string(lowered.status().message()),
              AllOf(HasSubstr("acc.yaml: distributed_type"), HasSubstr("not DEEPSPEED")));
}

TEST(LowerTest, JobWinsKeepsCommandLineValuesAndSaysSo) {
  LoweringInputs in = Inputs(kFullShard);
  in.job.shard.strategy = shard::Strategy::kNoShard;
  in.job_wins = [](TrainOptions& lowered, const TrainOptions& job) {
    lowered.shard.strategy = job.shard.strategy;
    return std::vector<std::string>{"--strategy"};
  };
  auto lowered = Lower(in);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->options.shard.strategy, shard::Strategy::kNoShard);
  EXPECT_THAT(lowered->notes, Contains(HasSubstr("command line wins over the config for "
                                                 "--strategy")));
}

TEST(LowerTest, AdamWithoutBiasCorrectionReachesTheOptimizer) {
  auto lowered = Lower(Inputs(kDeepSpeed, R"({"zero_optimization": {"stage": 1},
      "optimizer": {"type": "Adam", "params": {"lr": 1e-4, "bias_correction": false}}})"));
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_FALSE(lowered->options.adamw.bias_correction);
  auto corrected = Lower(Inputs(kDeepSpeed, R"({"zero_optimization": {"stage": 1},
      "optimizer": {"type": "Adam", "params": {"lr": 1e-4}}})"));
  ASSERT_TRUE(corrected.ok()) << corrected.status();
  EXPECT_TRUE(corrected->options.adamw.bias_correction);
}

}  // namespace
}  // namespace accel::config
