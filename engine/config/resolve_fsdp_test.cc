// FSDP and DDP resolution rules: precedence, default profiles, legacy keys, FSDP1 vs FSDP2.
#include "engine/config/test_util.h"
#include "gtest/gtest.h"

namespace accel::config {
namespace {

using testing::HasWarning;
using testing::ResolveText;

constexpr char kFsdp[] = "distributed_type: FSDP\nnum_processes: 4\n";

TrainPlan MustResolve(std::string_view yaml, const ConfigInputs& inputs = {}) {
  auto plan = ResolveText(yaml, "", inputs);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : TrainPlan{};
}

TEST(ResolveFsdpTest, EnvironmentFillsWhatTheYamlLacks) {
  ConfigInputs inputs;
  inputs.env = {{"FSDP_SHARDING_STRATEGY", "SHARD_GRAD_OP"}, {"FSDP_OFFLOAD_PARAMS", "true"},
                {"FSDP_STATE_DICT_TYPE", "SHARDED_STATE_DICT"}};
  const TrainPlan p = MustResolve(kFsdp, inputs);
  EXPECT_EQ(p.strategy, Strategy::kShardGradOp);
  EXPECT_EQ(p.offload_params, OffloadDevice::kCpu);
  EXPECT_EQ(p.state_dict_type, StateDictType::kSharded);
}

TEST(ResolveFsdpTest, YamlBeatsEnvironment) {
  ConfigInputs inputs;
  inputs.env = {{"FSDP_SHARDING_STRATEGY", "SHARD_GRAD_OP"}, {"FSDP_OFFLOAD_PARAMS", "true"}};
  const TrainPlan p = MustResolve(std::string(kFsdp) + "fsdp_config:\n"
                                  "  fsdp_sharding_strategy: FULL_SHARD\n"
                                  "  fsdp_offload_params: false\n", inputs);
  EXPECT_EQ(p.strategy, Strategy::kFullShard);
  EXPECT_EQ(p.offload_params, OffloadDevice::kNone);
}

TEST(ResolveFsdpTest, LauncherAndLibraryDefaultProfiles) {
  const std::string yaml = std::string(kFsdp) + "fsdp_config:\n"
                                                "  fsdp_auto_wrap_policy: SIZE_BASED_WRAP\n";
  const TrainPlan launcher = MustResolve(yaml);
  EXPECT_TRUE(launcher.use_orig_params);
  EXPECT_TRUE(launcher.cpu_ram_efficient_loading);
  EXPECT_TRUE(launcher.sync_module_states);
  EXPECT_EQ(launcher.min_num_params, 100000000);
  EXPECT_EQ(launcher.wrap_policy, WrapPolicy::kSizeBased);
  EXPECT_EQ(launcher.state_dict_type, StateDictType::kFull);  // FSDP1 default
  EXPECT_EQ(launcher.backward_prefetch, BackwardPrefetch::kNone);

  ConfigInputs library;
  library.defaults = DefaultProfile::kLibrary;
  const TrainPlan lib = MustResolve(yaml, library);
  EXPECT_FALSE(lib.use_orig_params);
  EXPECT_FALSE(lib.cpu_ram_efficient_loading);
  EXPECT_FALSE(lib.sync_module_states);
  // SIZE_BASED_WRAP with min_num_params 0 wraps nothing: said, and read as NO_WRAP.
  EXPECT_EQ(lib.wrap_policy, WrapPolicy::kNoWrap);
  EXPECT_TRUE(HasWarning(lib, "wraps nothing"));
}

TEST(ResolveFsdpTest, CpuRamEfficientLoadingForcesSyncModuleStates) {
  const TrainPlan p = MustResolve(std::string(kFsdp) + "fsdp_config:\n"
                                  "  fsdp_cpu_ram_efficient_loading: true\n"
                                  "  fsdp_sync_module_states: false\n");
  EXPECT_TRUE(p.sync_module_states);
  EXPECT_TRUE(HasWarning(p, "fsdp_config.fsdp_sync_module_states: sync_module_states cannot be "
                            "False since efficient cpu ram loading enabled"));
}

TEST(ResolveFsdpTest, QuestionnaireStrategyInReshardAfterForwardTakesEffect) {
  const TrainPlan p = MustResolve(std::string(kFsdp) + "fsdp_config:\n"
                                  "  fsdp_reshard_after_forward: SHARD_GRAD_OP\n");
  EXPECT_EQ(p.strategy, Strategy::kShardGradOp);
  EXPECT_FALSE(p.reshard_after_forward);
  EXPECT_TRUE(HasWarning(p, "would run FULL_SHARD"));

  const TrainPlan both = MustResolve(std::string(kFsdp) + "fsdp_config:\n"
                                     "  fsdp_sharding_strategy: FULL_SHARD\n"
                                     "  fsdp_reshard_after_forward: SHARD_GRAD_OP\n");
  EXPECT_EQ(both.strategy, Strategy::kFullShard);
  EXPECT_TRUE(HasWarning(both, "fsdp_reshard_after_forward: ignored: fsdp_sharding_strategy"));
}

TEST(ResolveFsdpTest, IntegerCodesAndKeysWithoutPrefix) {
  const TrainPlan p = MustResolve(std::string(kFsdp) + "fsdp_config:\n"
                                  "  sharding_strategy: 2\n"
                                  "  fsdp_state_dict_type: 3\n"
                                  "  backward_prefetch: 2\n");
  EXPECT_EQ(p.strategy, Strategy::kShardGradOp);
  EXPECT_EQ(p.state_dict_type, StateDictType::kSharded);
  EXPECT_EQ(p.backward_prefetch, BackwardPrefetch::kBackwardPost);
  EXPECT_EQ(MustResolve(std::string(kFsdp) + "fsdp_config:\n  fsdp_sharding_strategy: 5\n")
                .strategy,
            Strategy::kHybridShardZero2);
}

TEST(ResolveFsdpTest, LegacyBackwardPrefetchPolicyIsReadWithAWarning) {
  const TrainPlan p = MustResolve(std::string(kFsdp) + "fsdp_config:\n"
                                  "  fsdp_backward_prefetch_policy: BACKWARD_PRE\n");
  EXPECT_EQ(p.backward_prefetch, BackwardPrefetch::kBackwardPre);
  EXPECT_TRUE(HasWarning(p, "fsdp_config.fsdp_backward_prefetch_policy: legacy key; read as "
                            "fsdp_backward_prefetch: BACKWARD_PRE"));
  const TrainPlan both = MustResolve(std::string(kFsdp) + "fsdp_config:\n"
                                     "  fsdp_backward_prefetch_policy: BACKWARD_PRE\n"
                                     "  fsdp_backward_prefetch: BACKWARD_POST\n");
  EXPECT_EQ(both.backward_prefetch, BackwardPrefetch::kBackwardPost);
  EXPECT_TRUE(HasWarning(both, "legacy key ignored"));
}

TEST(ResolveFsdpTest, SpacesInTheWrapClassListAreStripped) {
  const TrainPlan p = MustResolve(std::string(kFsdp) + "fsdp_config:\n"
                                  "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                                  "  fsdp_transformer_layer_cls_to_wrap: 'LlamaDecoderLayer, "
                                  "LlamaMLP'\n");
  EXPECT_EQ(p.transformer_layer_cls_to_wrap,
            (std::vector<std::string>{"LlamaDecoderLayer", "LlamaMLP"}));
  EXPECT_TRUE(HasWarning(p, "read as \"LlamaDecoderLayer,LlamaMLP\""));
  ConfigInputs inputs;
  inputs.env = {{"FSDP_AUTO_WRAP_POLICY", "TRANSFORMER_BASED_WRAP"},
                {"FSDP_TRANSFORMER_CLS_TO_WRAP", "A, B"}};
  EXPECT_EQ(MustResolve(kFsdp, inputs).transformer_layer_cls_to_wrap,
            (std::vector<std::string>{"A", "B"}));
}

TEST(ResolveFsdpTest, Fsdp2Rules) {
  const std::string v2 = std::string(kFsdp) + "fsdp_config:\n  fsdp_version: 2\n";
  const TrainPlan plain = MustResolve(v2);
  EXPECT_EQ(plain.strategy, Strategy::kFullShard);
  EXPECT_EQ(plain.state_dict_type, StateDictType::kSharded);
  EXPECT_EQ(plain.backward_prefetch, BackwardPrefetch::kBackwardPre);
  EXPECT_TRUE(plain.use_orig_params);

  const TrainPlan p = MustResolve(v2 + "  fsdp_reshard_after_forward: false\n"
                                       "  fsdp_sharding_strategy: NO_SHARD\n"
                                       "  fsdp_use_orig_params: false\n"
                                       "  fsdp_backward_prefetch: BACKWARD_POST\n"
                                       "  fsdp_cpu_ram_efficient_loading: false\n");
  EXPECT_EQ(p.strategy, Strategy::kShardGradOp);
  EXPECT_TRUE(p.use_orig_params);
  EXPECT_FALSE(p.sync_module_states);
  EXPECT_EQ(p.backward_prefetch, BackwardPrefetch::kBackwardPre);
  EXPECT_TRUE(HasWarning(p, "fsdp_sharding_strategy: ignored with fsdp_version 2"));
  EXPECT_TRUE(HasWarning(p, "fsdp_use_orig_params: obsolete with fsdp_version 2"));
  EXPECT_TRUE(HasWarning(p, "fsdp_backward_prefetch: not supported with fsdp_version 2"));

  ConfigInputs env;
  env.env = {{"FSDP_RESHARD_AFTER_FORWARD", "false"}};
  EXPECT_EQ(MustResolve(v2, env).strategy, Strategy::kShardGradOp);
}

TEST(ResolveFsdpTest, Fsdp2HybridFromTheDeviceMesh) {
  const TrainPlan p = MustResolve(std::string(kFsdp) + "fsdp_config:\n  fsdp_version: 2\n"
                                  "parallelism_config:\n"
                                  "  parallelism_config_dp_replicate_size: 2\n"
                                  "  parallelism_config_dp_shard_size: 2\n");
  EXPECT_EQ(p.strategy, Strategy::kHybridShard);
  EXPECT_EQ(p.shard_group_size, 2);
}

TEST(ResolveFsdpTest, HybridShardsWithinAMachine) {
  const TrainPlan p = MustResolve("distributed_type: FSDP\nnum_processes: 8\nnum_machines: 2\n"
                                  "fsdp_config:\n  fsdp_sharding_strategy: HYBRID_SHARD_ZERO2\n");
  EXPECT_EQ(p.strategy, Strategy::kHybridShardZero2);
  EXPECT_EQ(p.shard_group_size, 4);
  EXPECT_FALSE(p.reshard_after_forward);
  EXPECT_FALSE(p.zero3_init);  // parameters are not kept sharded
  const TrainPlan one = MustResolve(std::string(kFsdp) +
                                    "fsdp_config:\n  fsdp_sharding_strategy: HYBRID_SHARD\n");
  EXPECT_TRUE(HasWarning(one, "hybrid sharding over a single group"));
}

TEST(ResolveFsdpTest, Fp16UsesTheGradScalerAndLoadDtypeWithoutMixedPrecision) {
  const TrainPlan fp16 = MustResolve(std::string(kFsdp) + "mixed_precision: fp16\n");
  EXPECT_EQ(fp16.mixed_precision.param_dtype, FloatType::kFp16);
  EXPECT_EQ(fp16.mixed_precision.reduce_dtype, FloatType::kFp16);
  EXPECT_EQ(fp16.mixed_precision.master_dtype, FloatType::kFp32);
  ASSERT_TRUE(fp16.loss_scaling.has_value());
  EXPECT_EQ(fp16.loss_scaling->loss_scale_window, 2000);
  EXPECT_EQ(fp16.loss_scaling->hysteresis, 1);

  ConfigInputs bf16_weights;
  bf16_weights.job.load_dtype = FloatType::kBf16;
  const TrainPlan p = MustResolve(kFsdp, bf16_weights);  // DESIGN §3.2: bf16 end to end
  EXPECT_EQ(p.mixed_precision.param_dtype, FloatType::kBf16);
  EXPECT_EQ(p.mixed_precision.master_dtype, FloatType::kBf16);
  EXPECT_EQ(p.mixed_precision.optimizer_dtype, FloatType::kBf16);
  EXPECT_FALSE(p.loss_scaling.has_value());
}

TEST(ResolveFsdpTest, PrecisionPrecedenceCommandLineYamlEnvironment) {
  ConfigInputs inputs;
  inputs.env = {{"ACCELERATE_MIXED_PRECISION", "fp16"}};
  EXPECT_EQ(MustResolve(kFsdp, inputs).mixed_precision.mode, PrecisionMode::kFp16);
  EXPECT_EQ(MustResolve(std::string(kFsdp) + "mixed_precision: bf16\n", inputs)
                .mixed_precision.mode,
            PrecisionMode::kBf16);
  inputs.mixed_precision = PrecisionMode::kNo;
  EXPECT_EQ(MustResolve(std::string(kFsdp) + "mixed_precision: bf16\n", inputs)
                .mixed_precision.mode,
            PrecisionMode::kNo);
}

TEST(ResolveFsdpTest, AccumulationFromEnvironmentOverJobAndTheBatchRule) {
  ConfigInputs inputs;
  inputs.job.micro_batch_size = 3;
  inputs.job.gradient_accumulation_steps = 2;
  TrainPlan p = MustResolve(kFsdp, inputs);
  EXPECT_EQ(p.gradient_accumulation_steps, 2);
  EXPECT_EQ(p.train_batch_size, 3 * 2 * 4);
  inputs.env = {{"ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "8"}};
  p = MustResolve(kFsdp, inputs);
  EXPECT_EQ(p.gradient_accumulation_steps, 8);
  EXPECT_EQ(p.train_batch_size, 3 * 8 * 4);
  EXPECT_TRUE(HasWarning(p, "8 overrides the job's 2"));
}

TEST(ResolveFsdpTest, CommandLineProcessesBeatTheFile) {
  ConfigInputs inputs;
  inputs.num_processes = 2;
  EXPECT_EQ(MustResolve(kFsdp, inputs).num_processes, 2);
  EXPECT_EQ(MustResolve("distributed_type: FSDP\nnum_processes: -1\n", inputs).num_processes, 2);
}

TEST(ResolveDdpTest, PlainDataParallel) {
  const TrainPlan p = MustResolve("distributed_type: MULTI_CPU\nnum_processes: 3\n"
                                  "mixed_precision: bf16\n");
  EXPECT_EQ(p.strategy, Strategy::kNoShard);
  EXPECT_EQ(p.mixed_precision.param_dtype, FloatType::kBf16);
  EXPECT_EQ(p.mixed_precision.reduce_dtype, FloatType::kFp32);  // autocast keeps fp32 grads
  EXPECT_TRUE(p.sync_module_states);

  const TrainPlan single = MustResolve("distributed_type: 'NO'\nnum_processes: 4\n");
  EXPECT_EQ(single.num_processes, 1);
  EXPECT_TRUE(HasWarning(single, "distributed_type NO runs one process"));
}

TEST(ResolveDdpTest, LegacyTopLevelKeys) {
  const TrainPlan p = MustResolve("distributed_type: NO\nfp16: true\ndynamo_backend: INDUCTOR\n");
  EXPECT_EQ(p.distributed_type, DistributedType::kNo);  // unquoted NO is YAML false
  EXPECT_EQ(p.mixed_precision.mode, PrecisionMode::kFp16);
  EXPECT_TRUE(HasWarning(p, "fp16: legacy key; read as mixed_precision: fp16"));
  EXPECT_TRUE(HasWarning(p, "dynamo_backend: legacy key"));
}

}  // namespace
}  // namespace accel::config
