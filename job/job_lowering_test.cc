// LowerJobSpec: the check acceld runs at submit and the options every daemon worker trains
// with, from one spec through one lowering.
#include "job/job_lowering.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "job/job_file.h"

namespace accel::job {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;

std::string Config(const std::string& name) {
  std::ifstream in(std::string(ACCEL_SOURCE_DIR) + "/configs/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << name;
  return ss.str();
}

accel::v1::JobSpec Spec(std::optional<int> processes) {
  accel::v1::JobSpec spec = job::DefaultJobSpec();
  spec.mutable_data()->set_path("/data/text.txt");  // not opened by the lowering
  spec.mutable_model()->set_preset("gpt2-tiny");
  if (processes) spec.mutable_resources()->set_num_processes(*processes);
  return spec;
}

std::string Message(const accel::v1::JobSpec& spec) {
  return std::string(LowerJobSpec(spec).status().message());
}

TEST(JobLoweringTest, NoConfigAndTheShippedConfigsLower) {
  EXPECT_TRUE(LowerJobSpec(Spec(1)).ok());
  for (const auto& [name, processes] :
       {std::pair<const char*, int>{"fsdp_full_shard.yaml", 2}, {"ds_zero2.yaml", 2}}) {
    accel::v1::JobSpec spec = Spec(processes);
    spec.set_accelerate_config_path(name);
    spec.set_accelerate_config_text(Config(name));
    EXPECT_TRUE(LowerJobSpec(spec).ok()) << name << ": " << LowerJobSpec(spec).status();
  }
  accel::v1::JobSpec spec = Spec(2);
  spec.set_accelerate_config_text(Config("ds_zero3_nvme.yaml"));
  spec.set_deepspeed_config_path("/cfg/ds_zero3_nvme.json");
  spec.set_deepspeed_config_text(Config("ds_zero3_nvme.json"));
  EXPECT_TRUE(LowerJobSpec(spec).ok()) << LowerJobSpec(spec).status();
}

// The CUDA model is GPT-2's only: a Llama on cuda is refused at submit, on cpu it lowers.
TEST(JobLoweringTest, ALlamaOnCudaIsRefusedAtSubmit) {
  accel::v1::JobSpec spec = Spec(1);
  spec.mutable_model()->set_preset("llama-tiny");
  EXPECT_TRUE(LowerJobSpec(spec).ok()) << LowerJobSpec(spec).status();
  spec.mutable_resources()->set_device("cuda");
  EXPECT_THAT(Message(spec), AllOf(HasSubstr("resources.device"), HasSubstr("llama-tiny"),
                                   HasSubstr("is llama")));
  spec.mutable_model()->set_preset("gpt2-tiny");
  EXPECT_TRUE(LowerJobSpec(spec).ok()) << LowerJobSpec(spec).status();
}

TEST(JobLoweringTest, IgnoreMemoryPlanReachesTheTrainOptions) {
  accel::v1::JobSpec spec = Spec(1);
  auto plain = LowerJobSpec(spec);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->options.ignore_memory_plan);
  auto parsed = job::ParseJobYaml("model: {preset: gpt2-tiny}\ndata: {path: /d.txt}\n"
                             "train: {ignore_memory_plan: true}\n",
                             "job.yaml", "/jobs");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto lowered = LowerJobSpec(*parsed);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_TRUE(lowered->options.ignore_memory_plan);
}

TEST(JobLoweringTest, ABadDeepSpeedJsonIsRejectedNamingTheFileAndKeyPath) {
  accel::v1::JobSpec spec = Spec(2);
  spec.set_accelerate_config_path("/cfg/ds.yaml");
  spec.set_accelerate_config_text(Config("ds_zero3_nvme.yaml"));
  spec.set_deepspeed_config_path("/cfg/bad.json");
  spec.set_deepspeed_config_text(R"({"zero_optimization": {"stage": 7}})");
  absl::Status s = LowerJobSpec(spec).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("/cfg/bad.json"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("zero_optimization.stage"));
}

TEST(JobLoweringTest, ABadAccelerateKeyIsRejectedNamingTheKeyPath) {
  accel::v1::JobSpec spec = Spec(2);
  spec.set_accelerate_config_path("/cfg/fsdp.yaml");
  spec.set_accelerate_config_text(
      "distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_sharding_strategy: HALF\n");
  absl::Status s = LowerJobSpec(spec).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("/cfg/fsdp.yaml:4"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("fsdp_config.fsdp_sharding_strategy"));
}

TEST(JobLoweringTest, AJsonBesideAnFsdpConfigIsRejected) {
  accel::v1::JobSpec spec = Spec(2);
  spec.set_deepspeed_config_text(Config("ds_zero3_nvme.json"));
  spec.set_accelerate_config_text(Config("fsdp_full_shard.yaml"));
  EXPECT_THAT(Message(spec), HasSubstr("distributed_type is FSDP, not DEEPSPEED"));
}

TEST(JobLoweringTest, AJsonAloneRunsUnderAnImpliedDeepSpeedConfig) {
  accel::v1::JobSpec spec = Spec(2);
  spec.set_deepspeed_config_path("/cfg/ds.json");
  spec.set_deepspeed_config_text(R"({"zero_optimization": {"stage": 2}})");
  auto lowered = LowerJobSpec(spec);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->options.shard.strategy, shard::Strategy::kShardGradOp);
  EXPECT_EQ(lowered->world_size, 2);
}

TEST(JobLoweringTest, ResourcesNumProcessesWinsOverTheConfigWithAWarning) {
  accel::v1::JobSpec three = Spec(3);
  three.set_accelerate_config_path("fsdp_full_shard.yaml");
  three.set_accelerate_config_text(Config("fsdp_full_shard.yaml"));
  auto lowered = LowerJobSpec(three);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->world_size, 3);
  EXPECT_THAT(lowered->notes,
              Contains(AllOf(HasSubstr("fsdp_full_shard.yaml"), HasSubstr("the file says 2"),
                             HasSubstr("resources.num_processes says 3"))));
}

TEST(JobLoweringTest, UnsetNumProcessesTakesTheConfigsCount) {
  accel::v1::JobSpec spec = Spec(std::nullopt);
  EXPECT_EQ(LowerJobSpec(spec)->world_size, 1);
  spec.set_accelerate_config_text(Config("fsdp_full_shard.yaml"));
  auto lowered = LowerJobSpec(spec);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->world_size, 2);
  EXPECT_EQ(ResolvedSpec(spec, *lowered).resources().num_processes(), 2);
}

// The done-when of "one plan": a FULL_SHARD config with a custom model config is stored and
// shown as full_shard with that model's dimensions, and no field keeps a replaced default.
TEST(JobLoweringTest, TheStoredSpecAndPlanShowWhatRuns) {
  const std::string model = ::testing::TempDir() + "/job_lowering_model.json";
  std::ofstream(model) << R"({"n_layer": 3, "n_head": 4, "n_embd": 64, "vocab_size": 300,
                              "n_positions": 128})";
  accel::v1::JobSpec spec = Spec(std::nullopt);
  spec.mutable_model()->set_preset("");
  spec.mutable_model()->set_config(model);
  spec.set_accelerate_config_path("fsdp_full_shard.yaml");
  spec.set_accelerate_config_text(Config("fsdp_full_shard.yaml"));
  auto lowered = LowerJobSpec(spec);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const accel::v1::JobSpec stored = ResolvedSpec(spec, *lowered);
  EXPECT_EQ(stored.sharding().strategy(), "full_shard");
  EXPECT_EQ(stored.resources().num_processes(), 2);
  const accel::v1::JobPlan plan = PlanToProto(*lowered, "cpu");
  EXPECT_EQ(plan.strategy(), "full_shard");
  EXPECT_EQ(plan.world_size(), 2);
  EXPECT_EQ(plan.global_batch(), plan.micro_batch() * plan.grad_accum() * 2);
  EXPECT_EQ(plan.model().n_layer(), 3);
  EXPECT_EQ(plan.model().n_head(), 4);
  EXPECT_EQ(plan.model().n_embd(), 64);
  EXPECT_EQ(plan.model().vocab_size(), 300);
  EXPECT_EQ(plan.model().num_params(), lowered->model.NumParams());
  EXPECT_EQ(plan.config(), "fsdp_full_shard.yaml");
}

TEST(JobLoweringTest, WhatAWorkerWouldRefuseIsRefusedHere) {
  accel::v1::JobSpec spec = Spec(2);
  spec.set_accelerate_config_path("ds.yaml");
  spec.set_accelerate_config_text("distributed_type: DEEPSPEED\nnum_processes: 2\n");
  spec.set_deepspeed_config_path("ds.json");
  spec.set_deepspeed_config_text(R"({"zero_optimization": {"stage": 2},
      "optimizer": {"type": "SGD", "params": {"lr": 0.1}}})");
  EXPECT_THAT(Message(spec), HasSubstr("ds.json: optimizer.type: SGD"));
  spec.set_deepspeed_config_text(R"({"zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "nvme", "nvme_path": "/proc/version/x"}}})");
  EXPECT_THAT(Message(spec), AllOf(HasSubstr("ds.json: zero_optimization.offload_optimizer"),
                                   HasSubstr("/proc/version")));
}

TEST(JobLoweringTest, HybridShardsWithinANodeWhenTheJobSpansNodes) {
  // A job file alone: no group size, two nodes of two ranks.
  accel::v1::JobSpec spec = Spec(4);
  spec.mutable_sharding()->set_strategy("hybrid_shard");
  spec.mutable_resources()->set_launcher("slurm");
  spec.mutable_resources()->set_nodes(2);
  absl::StatusOr<config::LoweredJob> job = LowerJobSpec(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->options.shard.hybrid_group_size, 2);

  // An Accelerate HYBRID_SHARD config that says one machine: resources.nodes wins, with a note.
  accel::v1::JobSpec from_config = Spec(4);
  from_config.mutable_resources()->set_nodes(2);
  from_config.set_accelerate_config_path("hybrid.yaml");
  from_config.set_accelerate_config_text(
      "distributed_type: FSDP\nnum_machines: 1\nfsdp_config:\n"
      "  fsdp_sharding_strategy: HYBRID_SHARD\n");
  job = LowerJobSpec(from_config);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->options.shard.hybrid_group_size, 2);
  EXPECT_THAT(job->notes, Contains(AllOf(HasSubstr("num_machines"), HasSubstr("resources.nodes"))));
}

// train.sample_every is refused at submit when its samples could not be text (a model that is
// not byte-level and no tokenizer) or its prompt leaves no position within seq_len; a prompt
// that fits lowers into the typed options.
TEST(JobLoweringTest, SamplesWithoutTextOrRoomAreRefusedAtSubmit) {
  accel::v1::JobSpec spec = Spec(1);
  spec.mutable_train()->set_seq_len(32);
  spec.mutable_train()->set_sample_every(10);
  spec.mutable_train()->set_sample_prompt(std::string(31, 'a'));
  absl::StatusOr<config::LoweredJob> job = LowerJobSpec(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->options.sample.every, 10);
  EXPECT_EQ(job->options.sample.prompt, std::string(31, 'a'));
  EXPECT_EQ(job->options.sample.max_new_tokens, 32);  // unset: the default
  EXPECT_EQ(job->options.sample.tokenizer, "");       // bytes

  spec.mutable_train()->set_sample_prompt(std::string(32, 'a'));
  EXPECT_THAT(Message(spec),
              HasSubstr("train.sample_prompt: 32 tokens; at most train.seq_len - 1 = 31"));

  accel::v1::JobSpec big = Spec(1);
  big.mutable_model()->set_preset("gpt2");
  big.mutable_train()->set_sample_every(10);
  EXPECT_EQ(LowerJobSpec(big).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(big), AllOf(HasSubstr("train.sample_every: samples need a tokenizer"),
                                  HasSubstr("vocabulary of 50257 tokens")));
  // Without samples the same model lowers.
  big.mutable_train()->set_sample_every(0);
  EXPECT_TRUE(LowerJobSpec(big).ok()) << LowerJobSpec(big).status();
}

}  // namespace
}  // namespace accel::job
