// The config files Accelerate, TRL and transformers publish (rewritten in tests/config/, see
// its README), resolved and checked key by key against the plan Accelerate would run.
#include "engine/base/env.h"
#include "engine/config/lower.h"
#include "engine/config/mode.h"
#include "engine/config/test_util.h"
#include "nlohmann/json.hpp"
#include "gtest/gtest.h"

namespace accel::config {
namespace {

using testing::HasWarning;
using testing::kDeepSpeedZero3Base;
using testing::kFsdpFullShardBase;
using testing::Merge;
using testing::PlanMatches;
using testing::ResolveFile;

constexpr char kBf16[] = R"({"mixed_precision": {"mode": "bf16", "param_dtype": "bf16",
    "reduce_dtype": "bf16", "master_dtype": "fp32", "optimizer_dtype": "fp32"}})";
constexpr char kDsFp16[] = R"({"mixed_precision": {"mode": "fp16", "param_dtype": "fp16",
    "reduce_dtype": "fp16", "master_dtype": "fp32", "optimizer_dtype": "fp32"},
    "loss_scaling": {"initial_scale_power": 16, "loss_scale_window": 1000, "hysteresis": 2,
                     "min_loss_scale": 1}})";
constexpr char kNoPrefetch[] = R"({"backward_prefetch": "none", "forward_prefetch": false,
    "prefetch": {"bucket_size": 0, "param_persistence_threshold": 0, "max_live_parameters": 0,
                 "max_reuse_distance": 0}})";
constexpr char kDdp[] = R"({
  "distributed_type": "MULTI_GPU", "num_processes": 8, "num_machines": 2,
  "strategy": "no_shard", "reshard_after_forward": false,
  "offload_params": "none", "offload_optimizer": "none",
  "offload_param_nvme_path": null, "offload_optimizer_nvme_path": null,
  "wrap_policy": "no_wrap", "transformer_layer_cls_to_wrap": [], "min_num_params": 0,
  "backward_prefetch": "none", "forward_prefetch": false, "state_dict_type": "full",
  "save_16bit_model": true, "use_orig_params": true, "sync_module_states": true,
  "cpu_ram_efficient_loading": false, "zero3_init": false, "activation_checkpointing": false,
  "mixed_precision": {"mode": "no", "param_dtype": "fp32", "reduce_dtype": "fp32",
                      "master_dtype": "fp32", "optimizer_dtype": "fp32"},
  "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
  "train_micro_batch_size_per_gpu": null, "train_batch_size": null, "loss_scaling": null,
  "prefetch": {"bucket_size": 0, "param_persistence_threshold": 0, "max_live_parameters": 0,
               "max_reuse_distance": 0}
})";

std::string Base(std::string_view base, std::initializer_list<std::string_view> overrides) {
  std::string out(base);
  for (std::string_view o : overrides) out = Merge(out, o);
  return out;
}

// --- FSDP -------------------------------------------------------------------------------

TEST(RealConfigsTest, AccelerateLatestFsdp) {
  auto plan = ResolveFile("tests/config/accelerate_latest_fsdp.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, Base(kFsdpFullShardBase, {R"({"num_processes": 1,
      "transformer_layer_cls_to_wrap": ["BertLayer"]})"})));
  EXPECT_TRUE(plan->warnings.size() == 1) << plan->warnings.size();  // only the job notice
}

TEST(RealConfigsTest, AccelerateFsdpTemplate) {
  auto plan = ResolveFile("tests/config/accelerate_fsdp_template.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, Base(kFsdpFullShardBase, {kBf16})));
}

TEST(RealConfigsTest, TrlFsdp2) {
  auto plan = ResolveFile("tests/config/trl_fsdp2.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  // FSDP2: reshard_after_forward true = full shard; it always prefetches like BACKWARD_PRE;
  // default state dict SHARDED; only cpu_ram_efficient_loading broadcasts from rank 0.
  EXPECT_TRUE(PlanMatches(*plan, Base(kFsdpFullShardBase, {kBf16, R"({"num_processes": 8})"})));
  EXPECT_EQ(plan->fsdp_version, 2);
}

TEST(RealConfigsTest, TpHsdpIsRejectedForTensorParallelism) {
  auto plan = ResolveFile("tests/config/accelerate_tp_hsdp.yaml");
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("parallelism_config.parallelism_config_tp_size"),
            std::string::npos)
      << plan.status();
}

TEST(RealConfigsTest, TrlFsdpQlora) {
  auto plan = ResolveFile("tests/config/trl_fsdp_qlora.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, Base(kFsdpFullShardBase, {kBf16, R"({"num_processes": 8,
      "offload_params": "cpu", "offload_optimizer": "cpu", "use_orig_params": false})"})));
}

// --- DeepSpeed plugin mode ------------------------------------------------------------------

TEST(RealConfigsTest, AccelerateDeepSpeedZero2Plugin) {
  auto plan = ResolveFile("tests/config/accelerate_ds_zero2_plugin.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, Base(kDeepSpeedZero3Base, {kDsFp16, kNoPrefetch,
      R"({"strategy": "shard_grad_op", "reshard_after_forward": false,
          "cpu_ram_efficient_loading": false, "zero3_init": false})"})));
  EXPECT_TRUE(HasWarning(*plan, "deepspeed_config.zero3_init_flag: DeepSpeed Zero3 Init flag is "
                                "only applicable for ZeRO Stage 3. Setting it to False."));
}

TEST(RealConfigsTest, TrlDeepSpeedZero2) {
  auto plan = ResolveFile("tests/config/trl_deepspeed_zero2.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, Base(kDeepSpeedZero3Base, {kNoPrefetch,
      R"({"strategy": "shard_grad_op", "reshard_after_forward": false, "num_processes": 8,
          "cpu_ram_efficient_loading": false, "zero3_init": false})"})));
}

TEST(RealConfigsTest, AccelerateDeepSpeedZero3OffloadPlugin) {
  auto plan = ResolveFile("tests/config/accelerate_ds_zero3_offload_plugin.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, Base(kDeepSpeedZero3Base, {kDsFp16, R"({"offload_params": "cpu",
      "offload_optimizer": "cpu", "save_16bit_model": true})"})));
}

TEST(RealConfigsTest, QuestionnaireZero3Nvme) {
  // Accelerate's launcher would drop the two nvme paths (it never exports them) and hand
  // DeepSpeed the string "none"; we keep what the file says.
  auto plan = ResolveFile("tests/config/questionnaire_ds_zero3_nvme.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, Base(kDeepSpeedZero3Base, {kBf16, R"({"num_processes": 4,
      "offload_params": "nvme", "offload_optimizer": "nvme", "offload_param_nvme_path": "/nvme",
      "offload_optimizer_nvme_path": "/nvme", "save_16bit_model": true})"})));
}

TEST(RealConfigsTest, DeepSpeedPdshMultiNode) {
  auto plan = ResolveFile("tests/config/ds_pdsh_multinode.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, Base(kDeepSpeedZero3Base, {kDsFp16, R"({"num_processes": 16,
      "num_machines": 2, "offload_params": "cpu", "offload_optimizer": "cpu",
      "save_16bit_model": true})"})));
}

TEST(RealConfigsTest, DeepSpeedStandardMultiNode) {
  auto plan = ResolveFile("tests/config/ds_standard_multinode.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, Base(kDeepSpeedZero3Base, {kDsFp16, R"({"num_processes": 16,
      "num_machines": 2, "save_16bit_model": true})"})));
}

// --- DeepSpeed JSON-file mode -------------------------------------------------------------

ConfigInputs Job() { return testing::ExampleJob(); }

constexpr char kBuckets1024[] = R"({"prefetch": {"bucket_size": 943718,
    "param_persistence_threshold": 10240, "max_live_parameters": 1000000000,
    "max_reuse_distance": 1000000000}, "train_micro_batch_size_per_gpu": 2,
    "train_batch_size": 4})";

TEST(RealConfigsTest, AccelerateZero3OffloadFileMode) {
  auto plan = ResolveFile("tests/config/accelerate_ds_zero3_offload_file.yaml", Job());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, Base(kDeepSpeedZero3Base, {kDsFp16, kBuckets1024,
      R"({"offload_params": "cpu", "offload_optimizer": "cpu"})"})));
  EXPECT_EQ(plan->comm.reduce_bucket_size, 1024 * 1024);
  ASSERT_TRUE(plan->scheduler.has_value());
  EXPECT_EQ(plan->scheduler->type, "WarmupDecayLR");
  EXPECT_EQ(plan->scheduler->total_num_steps, 500);
  EXPECT_EQ(plan->scheduler->warmup_num_steps, 0);
  EXPECT_DOUBLE_EQ(*plan->scheduler->warmup_max_lr, 1e-4);
}

TEST(RealConfigsTest, AccelerateDocVersionWithMixedPrecisionIsAConflict) {
  auto plan = ResolveFile("tests/config/accelerate_ds_zero3_offload_file_doc.yaml", Job());
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("accelerate_ds_zero3_offload_file_doc.yaml:13:1: "
                                         "mixed_precision:"),
            std::string::npos)
      << plan.status();
}

TEST(RealConfigsTest, DsConfigZero2JsonWithFp16Requested) {
  ConfigInputs inputs = Job();
  inputs.env["ACCELERATE_MIXED_PRECISION"] = "fp16";
  auto plan = ResolveFile("tests/config/ds_file_mode.yaml", inputs,
                          "tests/config/ds_config_zero2.json");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, Base(kDeepSpeedZero3Base, {kDsFp16, kNoPrefetch,
      R"({"strategy": "shard_grad_op", "reshard_after_forward": false,
          "offload_optimizer": "cpu", "cpu_ram_efficient_loading": false, "zero3_init": false,
          "train_micro_batch_size_per_gpu": 2, "train_batch_size": 4})"})));
  EXPECT_EQ(plan->comm.allgather_bucket_size, 200000000);
  EXPECT_TRUE(HasWarning(*plan, "zero3_init_flag"));
  EXPECT_EQ(plan->optimizer->type, "AdamW");
}

TEST(RealConfigsTest, DsConfigZero3JsonTakesSave16FromTheEnvironment) {
  ConfigInputs inputs = Job();
  inputs.env["ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL"] = "true";
  inputs.env["ACCELERATE_MIXED_PRECISION"] = "bf16";
  auto plan = ResolveFile("tests/config/ds_file_mode.yaml", inputs,
                          "tests/config/ds_config_zero3.json");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, Base(kDeepSpeedZero3Base, {kBf16, kBuckets1024,
      R"({"offload_params": "cpu", "offload_optimizer": "cpu", "save_16bit_model": true})"})));
}

TEST(RealConfigsTest, ZeroStageTemplates) {
  struct Case {
    const char* file;
    const char* strategy;
    const char* offload_optimizer;
  };
  for (const Case& c : {Case{"zero_stage1_config.json", "zero1", "none"},
                        Case{"zero_stage2_config.json", "shard_grad_op", "none"},
                        Case{"zero_stage2_offload_config.json", "shard_grad_op", "cpu"},
                        Case{"zero_stage3_config.json", "full_shard", "none"},
                        Case{"zero_stage3_offload_config.json", "full_shard", "cpu"}}) {
    auto plan = ResolveFile("tests/config/ds_file_mode.yaml", Job(),
                            std::string("tests/config/") + c.file);
    ASSERT_TRUE(plan.ok()) << c.file << ": " << plan.status();
    const bool z3 = std::string(c.strategy) == "full_shard";
    std::string expected = Base(kDeepSpeedZero3Base, {kDsFp16, z3 ? kBuckets1024 : kNoPrefetch,
        R"({"train_micro_batch_size_per_gpu": 2, "train_batch_size": 4})"});
    expected = Merge(expected, std::string(R"({"strategy": ")") + c.strategy +
                                   R"(", "offload_optimizer": ")" + c.offload_optimizer + "\"}");
    expected = Merge(expected, std::string(R"({"offload_params": ")") +
                                   (z3 && std::string(c.offload_optimizer) == "cpu" ? "cpu"
                                                                                   : "none") +
                                   R"(", "reshard_after_forward": )" + (z3 ? "true" : "false") +
                                   R"(, "cpu_ram_efficient_loading": )" + (z3 ? "true" : "false") +
                                   R"(, "zero3_init": )" + (z3 ? "true" : "false") + "}");
    EXPECT_TRUE(PlanMatches(*plan, expected)) << c.file;
    EXPECT_EQ(plan->scheduler->type, "WarmupDecayLR") << c.file;
  }
}

TEST(RealConfigsTest, TransformersZero3InfinityNeedsBetasAndEpsFromTheJob) {
  ConfigInputs inputs = Job();
  inputs.job_complete = true;
  auto plan = ResolveFile("tests/config/ds_file_mode.yaml", inputs,
                          "tests/config/transformers_zero3_infinity.json");
  ASSERT_FALSE(plan.ok());  // plain Accelerate fails here too ("not found in kwargs")
  EXPECT_NE(plan.status().message().find("optimizer.params.betas"), std::string::npos);
  EXPECT_NE(plan.status().message().find("optimizer.params.eps"), std::string::npos);

  inputs.job.betas = {{0.9, 0.999}};
  inputs.job.eps = 1e-8;
  inputs.env["ACCELERATE_MIXED_PRECISION"] = "fp16";
  plan = ResolveFile("tests/config/ds_file_mode.yaml", inputs,
                     "tests/config/transformers_zero3_infinity.json");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, Base(kDeepSpeedZero3Base, {kDsFp16, kBuckets1024,
      R"({"offload_params": "nvme", "offload_optimizer": "nvme", "save_16bit_model": true,
          "offload_param_nvme_path": "/local_nvme",
          "offload_optimizer_nvme_path": "/local_nvme"})"})));
  EXPECT_EQ(plan->offload_tuning.aio_block_size, 262144);
  EXPECT_EQ(plan->offload_tuning.aio_queue_depth, 32);
  EXPECT_TRUE(HasWarning(*plan, "zero_optimization.aio: DeepSpeed reads aio at the top level"));
  EXPECT_TRUE(HasWarning(*plan, "thread_count: legacy key; read as intra_op_parallelism"));
}

TEST(RealConfigsTest, Scenario3EveryLauncherKeyAuto) {
  // accelerate docs, Scenario 3: --mixed_precision=fp16 --zero_stage=3
  // --gradient_accumulation_steps=5 --gradient_clipping=1.0 --offload_param_device=cpu
  // --offload_optimizer_device=nvme --zero3_save_16bit_model=true, as the launcher exports them.
  ConfigInputs inputs;
  inputs.env = {{"ACCELERATE_MIXED_PRECISION", "fp16"},
                {"ACCELERATE_DEEPSPEED_ZERO_STAGE", "3"},
                {"ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "5"},
                {"ACCELERATE_GRADIENT_CLIPPING", "1.0"},
                {"ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", "cpu"},
                {"ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", "nvme"},
                {"ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL", "true"}};
  auto plan = ResolveFile("tests/config/ds_file_mode.yaml", inputs,
                          "tests/config/scenario3_all_auto.json");
  ASSERT_FALSE(plan.ok());  // nvme with no nvme_path: DeepSpeed would get None
  EXPECT_NE(plan.status().message().find("zero_optimization.offload_optimizer.nvme_path"),
            std::string::npos)
      << plan.status();

  // With "nvme_path": "auto" the path comes from the environment as well.
  auto text = ReadFileToString(Env::Default(), testing::SourcePath(
                                                   "tests/config/scenario3_all_auto.json"));
  ASSERT_TRUE(text.ok());
  nlohmann::json json = nlohmann::json::parse(*text);
  json["zero_optimization"]["offload_optimizer"]["nvme_path"] = "auto";
  inputs.env["ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_NVME_PATH"] = "/nvme";
  plan = testing::ResolveText("distributed_type: DEEPSPEED\nnum_processes: 2\n", json.dump(),
                              inputs);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, Base(kDeepSpeedZero3Base, {kDsFp16, R"({
      "offload_params": "cpu", "offload_optimizer": "nvme",
      "offload_optimizer_nvme_path": "/nvme", "save_16bit_model": true,
      "gradient_accumulation_steps": 5, "gradient_clipping": 1.0})"})));
  // And it runs as it says: the parameter shards on the host, the optimizer in files in /nvme.
  TrainOptions lowered;
  ASSERT_TRUE(ApplyTrainPlan(*plan, &lowered).ok());
  EXPECT_TRUE(lowered.shard.offload_params && lowered.shard.offload_optimizer);
  EXPECT_TRUE(lowered.shard.offload_params_to_host);
  EXPECT_EQ(lowered.shard.offload_dir, "/nvme");
  EXPECT_EQ(ParamsDevice(lowered), "host");
  EXPECT_EQ(OptimizerDevice(lowered), "nvme");
}

// --- DDP and the accelerate test configs ---------------------------------------------------

TEST(RealConfigsTest, AccelerateMultiNodeTemplate) {
  auto plan = ResolveFile("tests/config/accelerate_multi_node.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, kDdp));
}

TEST(RealConfigsTest, OldVersionedTestConfigs) {
  for (const char* file : {"tests/config/0_11_0.yaml", "tests/config/0_12_0.yaml"}) {
    auto plan = ResolveFile(file);
    ASSERT_TRUE(plan.ok()) << file << ": " << plan.status();
    EXPECT_TRUE(PlanMatches(*plan, Base(kDdp, {R"({"distributed_type": "NO",
        "num_processes": 1, "num_machines": 1, "sync_module_states": false})"})))
        << file;
  }
}

TEST(RealConfigsTest, InvalidKeysAreRejectedByName) {
  auto plan = ResolveFile("tests/config/invalid_keys.yaml");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("invalid_keys.yaml:15:1: invalid_key: unknown key"),
            std::string::npos)
      << plan.status();
  EXPECT_NE(plan.status().message().find("another_invalid_key: unknown key"), std::string::npos);
}

TEST(RealConfigsTest, ValidateLaunchCmdIgnoresSectionsOfOtherBackends) {
  auto plan = ResolveFile("tests/config/validate_launch_cmd.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->distributed_type, DistributedType::kNo);
  EXPECT_EQ(plan->strategy, Strategy::kNoShard);
  EXPECT_TRUE(HasWarning(*plan, "fsdp_config: ignored: distributed_type is NO"));
  EXPECT_TRUE(HasWarning(*plan, "deepspeed_config: ignored: distributed_type is NO"));
}

}  // namespace
}  // namespace accel::config
