// DeepSpeed resolution: plugin mode, JSON mode, "auto" sources, batch rule, legacy keys, and
// ResolvePlan's file handling.
#include "engine/base/env.h"
#include "engine/config/resolve.h"
#include "engine/config/test_util.h"
#include "engine/testing/mem_env.h"
#include "gtest/gtest.h"

namespace accel::config {
namespace {

using testing::HasWarning;
using testing::ResolveText;

constexpr char kDs[] = "distributed_type: DEEPSPEED\nnum_processes: 4\n";

TrainPlan MustResolve(std::string_view yaml, std::string_view json = "",
                      const ConfigInputs& inputs = {}) {
  auto plan = ResolveText(yaml, json, inputs);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : TrainPlan{};
}

TEST(ResolveDeepSpeedTest, PluginModeDefaults) {
  ConfigInputs inputs;
  inputs.job.micro_batch_size = 2;
  inputs.job.gradient_accumulation_steps = 3;
  inputs.job.gradient_clipping = 0.7;
  const TrainPlan p = MustResolve(kDs, "", inputs);
  EXPECT_EQ(p.strategy, Strategy::kShardGradOp);  // Accelerate's plugin default: stage 2
  EXPECT_EQ(p.offload_params, OffloadDevice::kNone);
  EXPECT_EQ(p.gradient_accumulation_steps, 3);  // "auto" → the Accelerator's (job's) value
  EXPECT_DOUBLE_EQ(p.gradient_clipping, 0.7);
  EXPECT_EQ(p.train_batch_size, 2 * 3 * 4);
  EXPECT_FALSE(p.zero3_init);
  EXPECT_EQ(p.comm.reduce_bucket_size, 500000000);  // DeepSpeed's code defaults
}

TEST(ResolveDeepSpeedTest, PluginModeEnvironmentAndYamlPrecedence) {
  ConfigInputs inputs;
  inputs.env = {{"ACCELERATE_DEEPSPEED_ZERO_STAGE", "3"},
                {"ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", "cpu"},
                {"ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", "cpu"},
                {"ACCELERATE_DEEPSPEED_ZERO3_INIT", "false"},
                {"ACCELERATE_GRADIENT_CLIPPING", "0.3"}};
  TrainPlan p = MustResolve(kDs, "", inputs);
  EXPECT_EQ(p.strategy, Strategy::kFullShard);
  EXPECT_EQ(p.offload_params, OffloadDevice::kCpu);
  EXPECT_FALSE(p.zero3_init);
  EXPECT_DOUBLE_EQ(p.gradient_clipping, 0.3);
  p = MustResolve(std::string(kDs) + "deepspeed_config:\n  zero_stage: 1\n"
                                     "  offload_param_device: none\n"
                                     "  gradient_clipping: 0.0\n", "", inputs);
  EXPECT_EQ(p.strategy, Strategy::kShardOptimizer);
  EXPECT_EQ(p.offload_params, OffloadDevice::kNone);
  EXPECT_EQ(p.offload_optimizer, OffloadDevice::kCpu);
  EXPECT_DOUBLE_EQ(p.gradient_clipping, 0.0);  // explicit 0 = no clipping
}

TEST(ResolveDeepSpeedTest, Save16BitEnvironmentVariableIsComparedWithTrueOnly) {
  ConfigInputs inputs;
  inputs.env = {{"ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL", "True"}};
  EXPECT_FALSE(MustResolve(kDs, "", inputs).save_16bit_model);
  inputs.env["ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL"] = "true";
  EXPECT_TRUE(MustResolve(kDs, "", inputs).save_16bit_model);
}

TEST(ResolveDeepSpeedTest, JsonValuesWinOverTheEnvironmentAndSaySo) {
  ConfigInputs inputs;
  inputs.env = {{"ACCELERATE_DEEPSPEED_ZERO_STAGE", "3"}};
  const TrainPlan p = MustResolve(kDs, R"({"zero_optimization": {"stage": 1}})", inputs);
  EXPECT_EQ(p.strategy, Strategy::kShardOptimizer);
  EXPECT_TRUE(HasWarning(p, "environment: ACCELERATE_DEEPSPEED_ZERO_STAGE: ignored: test.json "
                            "sets zero_optimization.stage to 1"));
}

TEST(ResolveDeepSpeedTest, JsonAbsentKeysTakeDeepSpeedDefaults) {
  ConfigInputs inputs;
  inputs.job.gradient_accumulation_steps = 4;
  inputs.env = {{"ACCELERATE_DEEPSPEED_ZERO_STAGE", "3"}};
  const TrainPlan p = MustResolve(kDs, R"({"zero_optimization": {}})", inputs);
  EXPECT_EQ(p.strategy, Strategy::kNoShard);  // no "stage": DeepSpeed's 0, env unused
  EXPECT_EQ(p.gradient_accumulation_steps, 1);  // Accelerate sets a missing one to 1 ...
  EXPECT_TRUE(HasWarning(p, "Gradient accumulation steps mismatch: the job has 4, DeepSpeed "
                            "config has 1. Using DeepSpeed's value."));  // ... and warns
  EXPECT_DOUBLE_EQ(p.gradient_clipping, 1.0);
}

// The section switches per-block checkpointing on; each key holds or is named with what happens.
TEST(ResolveDeepSpeedTest, ActivationCheckpointingSectionSwitchesCheckpointingOn) {
  EXPECT_FALSE(MustResolve(kDs, R"({"zero_optimization": {"stage": 3}})").activation_checkpointing);
  const TrainPlan p = MustResolve(kDs, R"({"zero_optimization": {"stage": 3},
      "activation_checkpointing": {"partition_activations": true, "cpu_checkpointing": true,
        "contiguous_memory_optimization": true, "number_checkpoints": 4, "profile": false}})");
  EXPECT_TRUE(p.activation_checkpointing);
  EXPECT_TRUE(HasWarning(p, "activation_checkpointing.partition_activations"));
  EXPECT_TRUE(HasWarning(p, "activation_checkpointing.cpu_checkpointing"));
  EXPECT_TRUE(HasWarning(p, "activation_checkpointing.number_checkpoints"));
  EXPECT_FALSE(HasWarning(p, "contiguous_memory_optimization"));
  EXPECT_FALSE(HasWarning(p, "activation_checkpointing.profile"));
  auto bad = ResolveText(kDs, R"({"activation_checkpointing": {"partition_activation": true}})");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("partition_activation"), std::string::npos)
      << bad.status();
}

// DeepSpeed's swap-pool knobs are named with what holds here instead; the aio section and
// pin_memory (under NVMe offload) are honoured, so they are not warned about.
TEST(ResolveDeepSpeedTest, OffloadKnobsAreNamedWithWhatHoldsInsteadAndAioIsHonoured) {
  const TrainPlan p = MustResolve(kDs, R"({"zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme", "pin_memory": true,
                            "buffer_count": 4},
      "offload_param": {"device": "nvme", "nvme_path": "/nvme", "buffer_size": 100000000,
                        "max_in_cpu": 1000}},
      "aio": {"block_size": 262144, "queue_depth": 16, "single_submit": true,
              "intra_op_parallelism": 2}})");
  for (const char* key : {"offload_optimizer.buffer_count", "offload_param.buffer_size",
                          "offload_param.max_in_cpu", "aio.intra_op_parallelism"}) {
    EXPECT_TRUE(HasWarning(p, key)) << key;
  }
  for (const char* key : {"offload_optimizer.pin_memory", "aio.block_size", "aio.queue_depth",
                          "aio.single_submit", "aio.overlap_events"}) {
    EXPECT_FALSE(HasWarning(p, key)) << key;
  }
  const TrainPlan cpu = MustResolve(kDs, R"({"zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "cpu", "pin_memory": true}}})");
  EXPECT_TRUE(HasWarning(cpu, "offload_optimizer.pin_memory"));
}

TEST(ResolveDeepSpeedTest, BatchRuleDerivesTheMicroBatchFromTheTotal) {
  const TrainPlan p = MustResolve(
      kDs, R"({"zero_optimization": {"stage": 2}, "train_batch_size": 32,
               "gradient_accumulation_steps": 2, "train_micro_batch_size_per_gpu": "auto"})");
  EXPECT_EQ(p.train_micro_batch_size_per_gpu, 4);
  EXPECT_EQ(p.train_batch_size, 32);
  auto bad = ResolveText(kDs, R"({"zero_optimization": {"stage": 2}, "train_batch_size": 30,
                                  "gradient_accumulation_steps": 2})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("train_batch_size: 30 is not divisible"),
            std::string::npos);

  ConfigInputs inputs;
  inputs.job.micro_batch_size = 8;
  const TrainPlan q = MustResolve(
      kDs, R"({"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": 2})", inputs);
  EXPECT_EQ(q.train_micro_batch_size_per_gpu, 2);
  EXPECT_TRUE(HasWarning(q, "test.json: train_micro_batch_size_per_gpu: 2 (fixed in the file) "
                            "is kept over the job's micro batch size 8"));
}

TEST(ResolveDeepSpeedTest, PrecisionFromMixedPrecisionRequest) {
  ConfigInputs inputs;
  inputs.env = {{"ACCELERATE_MIXED_PRECISION", "bf16"}};
  // A missing bf16 section is added by Accelerate, like "auto".
  TrainPlan p = MustResolve(kDs, R"({"zero_optimization": {"stage": 3}})", inputs);
  EXPECT_EQ(p.mixed_precision.mode, PrecisionMode::kBf16);
  EXPECT_FALSE(p.loss_scaling.has_value());
  p = MustResolve(kDs, R"({"zero_optimization": {"stage": 3}, "bf16": {"enabled": false}})",
                  inputs);
  EXPECT_EQ(p.mixed_precision.mode, PrecisionMode::kNo);
  EXPECT_TRUE(HasWarning(p, "false in the file wins"));
  p = MustResolve(kDs, R"({"zero_optimization": {"stage": 3}, "bf16": {"enabled": true},
                           "communication_data_type": "fp32"})");
  EXPECT_EQ(p.mixed_precision.param_dtype, FloatType::kBf16);
  EXPECT_EQ(p.mixed_precision.reduce_dtype, FloatType::kFp32);
  p = MustResolve(kDs, R"({"zero_optimization": {"stage": 3}, "fp16": {"enabled": true,
                           "initial_scale_power": 12, "loss_scale_window": 500,
                           "hysteresis": 4, "min_loss_scale": 0.5}})");
  ASSERT_TRUE(p.loss_scaling.has_value());
  EXPECT_EQ(p.loss_scaling->initial_scale_power, 12);
  EXPECT_EQ(p.loss_scaling->loss_scale_window, 500);
  EXPECT_EQ(p.loss_scaling->hysteresis, 4);
  EXPECT_DOUBLE_EQ(p.loss_scaling->min_loss_scale, 0.5);
}

TEST(ResolveDeepSpeedTest, LegacySpellingsAndAliases) {
  const TrainPlan p = MustResolve(kDs, R"({"zero_optimization": {"stage": 3,
      "cpu_offload": true, "stage3_gather_fp16_weights_on_model_save": true,
      "prefetch_bucket_size": 1000, "max_live_parameters": 7}, "bfloat16": {"enabled": true}})");
  EXPECT_EQ(p.offload_optimizer, OffloadDevice::kCpu);
  EXPECT_TRUE(p.save_16bit_model);
  EXPECT_EQ(p.prefetch.bucket_size, 1000);
  EXPECT_EQ(p.prefetch.max_live_parameters, 7);
  EXPECT_EQ(p.mixed_precision.mode, PrecisionMode::kBf16);
  EXPECT_TRUE(HasWarning(p, "zero_optimization.cpu_offload: legacy key; read as "
                            "offload_optimizer.device: cpu"));
  EXPECT_TRUE(HasWarning(p, "bfloat16: legacy section name"));
  auto both = ResolveText(kDs, R"({"zero_optimization": {"stage": 3,
      "prefetch_bucket_size": 1, "stage3_prefetch_bucket_size": 2}})");
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("zero_optimization.prefetch_bucket_size: given "
                                         "together with stage3_prefetch_bucket_size"),
            std::string::npos);
}

TEST(ResolveDeepSpeedTest, OptimizerAndSchedulerSections) {
  ConfigInputs inputs;
  inputs.job.lr = 3e-4;
  inputs.job.steps = 1000;
  inputs.job.warmup_steps = 50;
  inputs.num_processes = 4;
  const TrainPlan p = MustResolve(kDs, R"({"zero_optimization": {"stage": 1},
      "optimizer": {"type": "adamw", "params": {"lr": 1e-3, "weight_decay": "auto",
                                                "betas": [0.9, 0.95], "eps": 1e-6}},
      "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": "auto",
                                                         "warmup_num_steps": "auto"}}})",
                                  inputs);
  ASSERT_TRUE(p.optimizer.has_value());
  EXPECT_EQ(p.optimizer->type, "AdamW");
  EXPECT_DOUBLE_EQ(*p.optimizer->lr, 1e-3);  // the file's value, not the job's
  EXPECT_FALSE(p.optimizer->weight_decay.has_value());  // "auto", job gives none: pending
  EXPECT_TRUE(HasWarning(p, "optimizer.params.weight_decay (the job's weight_decay)"));
  EXPECT_DOUBLE_EQ((*p.optimizer->betas)[1], 0.95);
  ASSERT_TRUE(p.scheduler.has_value());
  EXPECT_EQ(p.scheduler->total_num_steps, 1000);  // the job's steps, not divided by 4
  EXPECT_EQ(p.scheduler->warmup_num_steps, 50);

  inputs.job_complete = true;
  inputs.job.micro_batch_size = 1;
  const TrainPlan q = MustResolve(
      kDs, R"({"zero_optimization": {"stage": 1},
               "optimizer": {"type": "AdamW", "params": {"weight_decay": "auto"}}})", inputs);
  EXPECT_DOUBLE_EQ(*q.optimizer->weight_decay, 0.0);  // Accelerate's DummyOptim default
}

TEST(ResolveDeepSpeedTest, Zero3InitFlag) {
  ConfigInputs inputs;
  inputs.env = {{"ACCELERATE_DEEPSPEED_ZERO3_INIT", "true"}};
  const TrainPlan p = MustResolve(std::string(kDs) + "deepspeed_config:\n  zero_stage: 1\n", "",
                                  inputs);
  EXPECT_FALSE(p.zero3_init);
  EXPECT_TRUE(HasWarning(p, "only applicable for ZeRO Stage 3"));
  EXPECT_TRUE(MustResolve(std::string(kDs) + "deepspeed_config:\n  zero_stage: 3\n").zero3_init);
}

TEST(ResolveDeepSpeedTest, JobValuesOutOfRangeAreErrors) {
  ConfigInputs inputs;
  inputs.job.hidden_size = 0;
  inputs.job.micro_batch_size = int64_t{1} << 40;
  inputs.job.betas = {{0.9, 1.5}};
  auto plan = ResolveText(kDs, R"({"zero_optimization": {"stage": 3,
                                   "reduce_bucket_size": "auto"}})", inputs);
  ASSERT_FALSE(plan.ok());
  const std::string message(plan.status().message());
  EXPECT_NE(message.find("job: hidden_size: 0 is out of range"), std::string::npos) << message;
  EXPECT_NE(message.find("job: micro_batch_size: 1099511627776 is out of range"),
            std::string::npos);
  EXPECT_NE(message.find("job: betas: must both be in [0, 1)"), std::string::npos);
}

TEST(ResolvePlanTest, FindsTheJsonBesideTheYamlAndHonoursTheCommandLine) {
  accel::testing::MemEnv env;
  ASSERT_TRUE(env.CreateDirs("/cfg").ok());
  ASSERT_TRUE(WriteFileAtomic(&env, "/cfg/a.yaml",
                              "distributed_type: DEEPSPEED\nnum_processes: 2\n"
                              "deepspeed_config:\n  deepspeed_config_file: z3.json\n")
                  .ok());
  ASSERT_TRUE(WriteFileAtomic(&env, "/cfg/z3.json", R"({"zero_optimization": {"stage": 3}})")
                  .ok());
  ASSERT_TRUE(WriteFileAtomic(&env, "/cfg/z1.json", R"({"zero_optimization": {"stage": 1}})")
                  .ok());
  ConfigInputs inputs;
  inputs.accelerate_config = "/cfg/a.yaml";
  auto plan = ResolvePlan(inputs, &env);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->strategy, Strategy::kFullShard);

  inputs.deepspeed_config = "/cfg/z1.json";  // --deepspeed-config wins
  plan = ResolvePlan(inputs, &env);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->strategy, Strategy::kShardOptimizer);

  inputs.deepspeed_config = "/cfg/missing.json";
  plan = ResolvePlan(inputs, &env);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kNotFound);

  inputs.deepspeed_config.clear();
  inputs.accelerate_config = "/cfg/none.yaml";
  EXPECT_EQ(ResolvePlan(inputs, &env).status().code(), absl::StatusCode::kNotFound);
}

TEST(ResolvePlanTest, DeepSpeedJsonWithANonDeepSpeedTypeIsAnError) {
  accel::testing::MemEnv env;
  ASSERT_TRUE(WriteFileAtomic(&env, "/f.yaml", "distributed_type: FSDP\nnum_processes: 2\n").ok());
  ConfigInputs inputs;
  inputs.accelerate_config = "/f.yaml";
  inputs.deepspeed_config = "/z.json";
  auto plan = ResolvePlan(inputs, &env);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("distributed_type is FSDP, not DEEPSPEED"),
            std::string::npos);
}

}  // namespace
}  // namespace accel::config
