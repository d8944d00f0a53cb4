// Malformed and conflicting inputs: each must fail with InvalidArgument and a message naming
// the key path (and file, and line where the YAML gives one).
#include <optional>
#include <string>
#include <vector>

#include "engine/config/document.h"
#include "engine/config/resolve.h"
#include "engine/config/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::config {
namespace {

struct Case {
  const char* name;
  std::string yaml;
  std::string json;  // "" = none
  std::vector<std::pair<std::string, std::string>> env;
  const char* expect;  // substring of the error message
  bool job_complete = false;
};

constexpr char kFsdp[] = "distributed_type: FSDP\nnum_processes: 4\nfsdp_config:\n";
constexpr char kFsdp2[] =
    "distributed_type: FSDP\nnum_processes: 4\nfsdp_config:\n  fsdp_version: 2\n";
constexpr char kDs[] = "distributed_type: DEEPSPEED\nnum_processes: 4\ndeepspeed_config:\n";
constexpr char kDsFile[] = "distributed_type: DEEPSPEED\nnum_processes: 4\n";

std::string Cat(const char* a, const char* b) { return std::string(a) + b; }

const std::vector<Case>& Cases() {
  static const auto* cases = new std::vector<Case>{
      // --- Accelerate YAML, top level
      {"TopLevelTypo", "distributed_type: FSDP\nnum_proceses: 2\n", "", {},
       "test.yaml:2:1: num_proceses: unknown key (did you mean \"num_processes\"?)"},
      {"MissingDistributedType", "num_processes: 2\n", "", {},
       "distributed_type: A distributed_type must be specified"},
      {"DistributedTypeTypo", "distributed_type: FSPD\n", "", {},
       "distributed_type: \"FSPD\" is not one of NO, MULTI_CPU, MULTI_GPU, FSDP, DEEPSPEED "
       "(did you mean \"FSDP\"?)"},
      {"UnsupportedBackend", "distributed_type: XLA\n", "", {},
       "distributed_type: \"XLA\" is not supported"},
      {"MixedPrecisionFp32", "distributed_type: 'NO'\nmixed_precision: fp32\n", "", {},
       "mixed_precision: \"fp32\" is not one of no, fp16, bf16"},
      {"MixedPrecisionFp8", "distributed_type: 'NO'\nmixed_precision: fp8\n", "", {},
       "mixed_precision: \"fp8\" is not supported"},
      {"ZeroProcesses", "distributed_type: MULTI_GPU\nnum_processes: 0\n", "", {},
       "num_processes: must be at least 1"},
      {"ProcessesNotSet", "distributed_type: FSDP\n", "", {}, "num_processes: not set"},
      {"ProcessesOverMachines", "distributed_type: FSDP\nnum_processes: 3\nnum_machines: 2\n", "",
       {}, "num_processes: 3 processes do not divide evenly over 2 machines"},
      {"MachineRankTooHigh",
       "distributed_type: FSDP\nnum_processes: 4\nnum_machines: 2\nmachine_rank: 2\n", "", {},
       "machine_rank: 2 is not below num_machines 2"},
      {"PortOutOfRange", "distributed_type: MULTI_GPU\nnum_processes: 2\nmain_process_port: 70000\n",
       "", {}, "main_process_port: 70000 is out of range"},
      {"RdzvBackendTypo", "distributed_type: MULTI_GPU\nnum_processes: 2\nrdzv_backend: statc\n",
       "", {}, "rdzv_backend: \"statc\" is not one of static, c10d, etcd, etcd-v2 (did you mean"},
      {"Fp8ConfigGiven", "distributed_type: MULTI_GPU\nnum_processes: 2\nfp8_config:\n  a: 1\n", "",
       {}, "fp8_config: is not supported"},
      {"SageMaker",
       "compute_environment: AMAZON_SAGEMAKER\ndistributed_type: MULTI_GPU\nnum_processes: 2\n", "",
       {}, "compute_environment: \"AMAZON_SAGEMAKER\" is not supported"},
      // --- fsdp_config
      {"FsdpKeyTypo", "distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n"
                      "  fsdp_sharding_stratgy: FULL_SHARD\n", "", {},
       "test.yaml:4:3: fsdp_config.fsdp_sharding_stratgy: unknown key (did you mean "
       "\"fsdp_sharding_strategy\"?)"},
      {"StrategyTypo", "distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n"
                       "  fsdp_sharding_strategy: FULL_SHRAD\n", "", {},
       "fsdp_config.fsdp_sharding_strategy: \"FULL_SHRAD\" is not one of FULL_SHARD, "
       "SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, HYBRID_SHARD_ZERO2 (did you mean \"FULL_SHARD\"?)"},
      {"StrategyCode7", Cat(kFsdp, "  fsdp_sharding_strategy: 7\n"), "", {},
       "fsdp_config.fsdp_sharding_strategy: 7 is not one of"},
      {"OffloadNotBool", Cat(kFsdp, "  fsdp_offload_params: maybe\n"), "", {},
       "fsdp_config.fsdp_offload_params: \"maybe\" is not a boolean"},
      {"WrapPolicyUnknown", Cat(kFsdp, "  fsdp_auto_wrap_policy: LAYER_WRAP\n"), "", {},
       "fsdp_config.fsdp_auto_wrap_policy: \"LAYER_WRAP\" is not one of TRANSFORMER_BASED_WRAP"},
      {"LocalStateDictFsdp2", Cat(kFsdp2, "  fsdp_state_dict_type: LOCAL_STATE_DICT\n"),
       "", {}, "fsdp_config.fsdp_state_dict_type: FSDP2 does not support LOCAL_STATE_DICT"},
      {"FsdpVersion3", Cat(kFsdp, "  fsdp_version: 3\n"), "", {},
       "fsdp_config.fsdp_version: 3 is out of range [1, 2]"},
      {"ForwardPrefetchFsdp2", Cat(kFsdp2, "  fsdp_forward_prefetch: true\n"), "", {},
       "fsdp_config.fsdp_forward_prefetch: forward_prefetch is not yet implemented in FSDP2"},
      {"StrategyNameAsFsdp2Reshard",
       Cat(kFsdp2, "  fsdp_reshard_after_forward: FULL_SHARD\n"), "", {},
       "fsdp_config.fsdp_reshard_after_forward: with fsdp_version 2 this is a bool"},
      {"NegativeMinParams", Cat(kFsdp, "  fsdp_min_num_params: -5\n"), "", {},
       "fsdp_config.fsdp_min_num_params: -5 is out of range"},
      {"IgnoredModules", Cat(kFsdp, "  fsdp_ignored_modules: lm_head\n"), "", {},
       "fsdp_config.fsdp_ignored_modules: ignoring modules is not supported"},
      {"CheckpointingWithoutWrapFsdp2",
       Cat(kFsdp2, "  fsdp_activation_checkpointing: true\n  fsdp_auto_wrap_policy: NO_WRAP\n")
,
       "", {}, "fsdp_config.fsdp_activation_checkpointing: needs an fsdp_auto_wrap_policy"},
      {"EmptyClassName", Cat(kFsdp, "  fsdp_transformer_layer_cls_to_wrap: Block,,Attn\n"),
       "", {}, "fsdp_config.fsdp_transformer_layer_cls_to_wrap: empty class name"},
      {"FsdpConfigNotAMapping", "distributed_type: FSDP\nnum_processes: 2\nfsdp_config: yes\n", "",
       {}, "fsdp_config: expected a mapping of keys, got true"},
      {"ParallelismWithFsdp1",
       Cat(kFsdp, "  fsdp_version: 1\nparallelism_config:\n"
                  "  parallelism_config_dp_replicate_size: 2\n"),
       "", {}, "parallelism_config: needs distributed_type FSDP with fsdp_version 2"},
      {"ParallelismProduct",
       Cat(kFsdp2, "parallelism_config:\n  parallelism_config_dp_replicate_size: 3\n"
                   "  parallelism_config_dp_shard_size: 2\n"),
       "", {}, "parallelism_config: dp_replicate_size × dp_shard_size × tp_size × cp_size = 6"},
      // --- deepspeed_config (plugin mode)
      {"ZeroStage4", Cat(kDs, "  zero_stage: 4\n"), "", {},
       "deepspeed_config.zero_stage: 4 is out of range [0, 3]"},
      {"ParamDeviceGpu", Cat(kDs, "  offload_param_device: gpu\n"), "", {},
       "deepspeed_config.offload_param_device: \"gpu\" is not one of none, cpu, nvme"},
      {"ParamOffloadBelowStage3",
       Cat(kDs, "  zero_stage: 2\n  offload_param_device: cpu\n"), "", {},
       "deepspeed_config.offload_param_device: parameter offload needs ZeRO stage 3"},
      {"OptimizerOffloadAtStage0",
       Cat(kDs, "  zero_stage: 0\n  offload_optimizer_device: cpu\n"), "", {},
       "deepspeed_config.offload_optimizer_device: optimizer offload needs ZeRO stage 1"},
      {"NvmeWithoutPath",
       Cat(kDs, "  zero_stage: 3\n  offload_optimizer_device: nvme\n"), "", {},
       "deepspeed_config.offload_optimizer_nvme_path: nvme offload needs a directory"},
      {"DeepSpeedKeyTypo", Cat(kDs, "  zero_stag: 3\n"), "", {},
       "deepspeed_config.zero_stag: unknown key (did you mean \"zero_stage\"?)"},
      {"LauncherUnknown", Cat(kDs, "  deepspeed_multinode_launcher: ssh\n"), "", {},
       "deepspeed_config.deepspeed_multinode_launcher: \"ssh\" is not one of pdsh"},
      {"NegativeClipping", Cat(kDs, "  gradient_clipping: -1\n"), "", {},
       "deepspeed_config.gradient_clipping: -1 is out of range"},
      // --- text
      {"DuplicateKey", "distributed_type: FSDP\nnum_processes: 2\nnum_processes: 4\n", "", {},
       "test.yaml:3:1: num_processes: key given twice (also at line 2)"},
      {"MalformedYaml", "distributed_type: FSDP\nfsdp_config:\n  a: [1, 2\n  b: 3\n", "", {},
       "test.yaml:"},
      {"YamlRootIsAList", "- distributed_type: FSDP\n", "", {},
       "test.yaml: expected a mapping of Accelerate keys"},
      {"MalformedJson", kDsFile, "{\n  \"zero_optimization\": {\"stage\": 3,,}\n}", {},
       "test.json:2:"},
      // --- DeepSpeed JSON
      {"JsonDeviceGpu", kDsFile,
       R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "gpu"}}})", {},
       "test.json: zero_optimization.offload_param.device: \"gpu\" is not one of none, cpu, nvme"},
      {"JsonSectionTypo", kDsFile, R"({"zero_optimisation": {"stage": 3}})", {},
       "test.json: zero_optimisation: unknown key (did you mean \"zero_optimization\"?)"},
      {"JsonWithoutZero", kDsFile, R"({"train_micro_batch_size_per_gpu": 2})", {},
       "test.json: zero_optimization: missing: Please specify the ZeRO optimization config"},
      {"JsonStageWord", kDsFile, R"({"zero_optimization": {"stage": "three"}})", {},
       "test.json: zero_optimization.stage: \"three\" is not an integer"},
      {"LeftoverAuto", kDsFile, R"({"zero_optimization": {"stage": 3, "sub_group_size": "auto"}})",
       {}, "test.json: zero_optimization.sub_group_size: \"auto\" cannot be filled here"},
      {"BetasAutoWithoutJobBetas", kDsFile,
       R"({"zero_optimization": {"stage": 2}, "optimizer": {"type": "AdamW",
           "params": {"lr": 1e-4, "betas": "auto"}}})",
       {}, "test.json: optimizer.params.betas: needs the job's betas", true},
      {"UnsupportedOptimizer", kDsFile,
       R"({"zero_optimization": {"stage": 2}, "optimizer": {"type": "Lamb"}})", {},
       "test.json: optimizer.type: \"Lamb\" is not supported by this engine"},
      {"BatchRule", kDsFile,
       R"({"zero_optimization": {"stage": 2}, "train_batch_size": 10,
           "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1})",
       {}, "test.json: train_batch_size: Check batch related parameters. train_batch_size is not "
           "equal to micro_batch_per_gpu * gradient_acc_step * world_size 10 != 2 * 1 * 4"},
      {"YamlAndJsonBothSetStage", Cat(kDs, "  zero_stage: 3\n"),
       R"({"zero_optimization": {"stage": 3}})", {},
       "test.yaml:4:3: deepspeed_config.zero_stage: also controlled by the DeepSpeed config file"},
      {"YamlMixedPrecisionWithJson", Cat(kDsFile, "mixed_precision: bf16\n"),
       R"({"zero_optimization": {"stage": 3}, "bf16": {"enabled": "auto"}})", {},
       "test.yaml:3:1: mixed_precision: cannot be set in the YAML together with the DeepSpeed"},
      {"BothPrecisions", kDsFile,
       R"({"zero_optimization": {"stage": 3}, "bf16": {"enabled": true},
           "fp16": {"enabled": true}})",
       {}, "test.json: fp16.enabled: fp16 and bf16 cannot both be enabled"},
      {"RequestedBf16AgainstJsonFp16", kDsFile,
       R"({"zero_optimization": {"stage": 3}, "fp16": {"enabled": true}})",
       {{"ACCELERATE_MIXED_PRECISION", "bf16"}},
       "fp16.enabled: `--mixed_precision` arg cannot be set to `bf16` when `fp16` is set in the "
       "DeepSpeed config file."},
      {"StaticLossScale", kDsFile,
       R"({"zero_optimization": {"stage": 3}, "fp16": {"enabled": true, "loss_scale": 128}})", {},
       "test.json: fp16.loss_scale: a static loss scale is not supported"},
      {"ZeroPlusPlus", kDsFile,
       R"({"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 8}})", {},
       "test.json: zero_optimization.zero_hpz_partition_size: ZeRO++ hierarchical"},
      {"AmpEnabled", kDsFile, R"({"zero_optimization": {"stage": 1}, "amp": {"enabled": true}})",
       {}, "test.json: amp: is not supported by this engine"},
      {"DecayWithoutTotal", kDsFile,
       R"({"zero_optimization": {"stage": 1}, "scheduler": {"type": "WarmupDecayLR",
           "params": {"warmup_num_steps": 10}}})",
       {}, "test.json: scheduler.params.total_num_steps: required by WarmupDecayLR"},
      {"BucketAutoWithoutHiddenSize", kDsFile,
       R"({"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}})", {},
       "test.json: zero_optimization.reduce_bucket_size: needs the model's hidden size", true},
      {"PartialOptimizerOffload", kDsFile,
       R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu",
           "ratio": 0.5}}})",
       {}, "test.json: zero_optimization.offload_optimizer.ratio: partial optimizer offload"},
      {"SchedulerParamTypo", kDsFile,
       R"({"zero_optimization": {"stage": 1}, "scheduler": {"type": "WarmupLR",
           "params": {"warmup_max_lrr": 0.1}}})",
       {}, "test.json: scheduler.params.warmup_max_lrr: unknown key (did you mean "
           "\"warmup_max_lr\"?)"},
      {"ZeroAccumulation", kDsFile,
       R"({"zero_optimization": {"stage": 1}, "gradient_accumulation_steps": 0})", {},
       "test.json: gradient_accumulation_steps: 0 is out of range"},
      {"JsonNotAnObject", kDsFile, "[1, 2]", {},
       "test.json: expected a JSON object at the top level"},
      // --- environment and job
      {"EnvStrategy", kFsdp, "", {{"FSDP_SHARDING_STRATEGY", "BOGUS"}},
       "environment: FSDP_SHARDING_STRATEGY: \"BOGUS\" is not one of FULL_SHARD"},
      {"EnvMixedPrecision", kFsdp, "", {{"ACCELERATE_MIXED_PRECISION", "fp64"}},
       "environment: ACCELERATE_MIXED_PRECISION: \"fp64\" is not one of no, fp16, bf16"},
      {"EnvZeroStage", kDs, "", {{"ACCELERATE_DEEPSPEED_ZERO_STAGE", "5"}},
       "environment: ACCELERATE_DEEPSPEED_ZERO_STAGE: 5 is out of range [0, 3]"},
      {"EnvOffloadBool", kFsdp, "", {{"FSDP_OFFLOAD_PARAMS", "perhaps"}},
       "environment: FSDP_OFFLOAD_PARAMS: \"perhaps\" is not a boolean"},
      {"JobWithoutMicroBatch", kFsdp, "", {},
       "job: train_micro_batch_size_per_gpu: needs the job's micro batch", true},
  };
  return *cases;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class MalformedTest : public ::testing::TestWithParam<Case> {};

TEST_P(MalformedTest, FailsNamingTheKey) {
  const Case& c = GetParam();
  ConfigInputs inputs;
  for (const auto& [k, v] : c.env) inputs.env[k] = v;
  inputs.job_complete = c.job_complete;
  auto plan = testing::ResolveText(c.yaml, c.json, inputs);
  ASSERT_FALSE(plan.ok()) << c.name << " resolved";
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find(c.expect), std::string::npos)
      << c.name << "\n  message: " << plan.status().message() << "\n  expected: " << c.expect;
}

// The same files as acceld reads them for an RPC client (Echo::kPositionsOnly; docs/rpc.md):
// still refused, still at a position, with no "did you mean" about a name of the file.
absl::StatusOr<TrainPlan> ResolveForClient(const Case& c) {
  ConfigInputs inputs;
  for (const auto& [k, v] : c.env) inputs.env[k] = v;
  inputs.job_complete = c.job_complete;
  absl::StatusOr<Document> yaml = ParseYamlDocument(c.yaml, "test.yaml", Echo::kPositionsOnly);
  if (!yaml.ok()) return yaml.status();
  std::optional<Document> json;
  if (!c.json.empty()) {
    absl::StatusOr<Document> parsed = ParseJsonDocument(c.json, "test.json", Echo::kPositionsOnly);
    if (!parsed.ok()) return parsed.status();
    json = *std::move(parsed);
  }
  return ResolveDocuments(*yaml, json ? &*json : nullptr, inputs);
}

TEST_P(MalformedTest, FailsForAClientWithoutQuotingTheFile) {
  const Case& c = GetParam();
  auto plan = ResolveForClient(c);
  ASSERT_FALSE(plan.ok()) << c.name << " resolved";
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  if (!c.env.empty()) return;  // the environment is acceld's own, not a client's file
  EXPECT_THAT(std::string(plan.status().message()),
              ::testing::Not(::testing::HasSubstr("did you mean")))
      << c.name;
}

// Issue 28: each place a value or a key of the file reached a message, with a secret in it.
TEST(MalformedForAClientTest, NoMessageCarriesTheFilesWords) {
  const std::pair<std::string, std::string> cases[] = {
      {"root:*:20228:0:99999:7:::\n", ""},
      {"distributed_type: FSDP\nhunter2: 1\n", ""},
      {"distributed_type: FSDP\nhunter2: 1\nhunter2: 2\n", ""},
      {"distributed_type: FSDP\nfsdp_config:\n  fsdp_hunter2: 1\n", ""},
      {"distributed_type: hunter2\n", ""},
      {"distributed_type: FSDP\nnum_processes: hunter2\n", ""},
      {"distributed_type: FSDP\nfsdp_config:\n  fsdp_offload_params: hunter2\n", ""},
      {"distributed_type: FSDP\nfsdp_config: hunter2\n", ""},
      {"distributed_type: FSDP\ncompute_environment: hunter2\n", ""},
      {"distributed_type: FSDP\nrdzv_backend: hunter2\n", ""},
      {"name: \"hunter2\\q\"\n", ""},
      {kDsFile, "{\"hunter2\": 1}"},
      {kDsFile, "{\"a\": hunter2}"},
      {kDsFile, "{\"optimizer\": {\"type\": \"hunter2\"}}"},
      {kDsFile, "{\"scheduler\": {\"type\": \"hunter2\"}}"},
      {kDsFile, "{\"optimizer\": {\"type\": \"AdamW\", \"params\": {\"betas\": \"hunter2\"}}}"},
      {kDsFile, "{\"zero_optimization\": {\"stage\": \"hunter2\"}}"}};
  for (const auto& [yaml, json] : cases) {
    Case c{"secret", yaml, json, {}, ""};
    auto plan = ResolveForClient(c);
    ASSERT_FALSE(plan.ok()) << yaml << json;
    const std::string message(plan.status().message());
    for (const char* secret : {"hunter2", "root", "20228", "escape"}) {
      EXPECT_THAT(message, ::testing::Not(::testing::HasSubstr(secret))) << message;
    }
    EXPECT_THAT(message, ::testing::HasSubstr(json.empty() ? "test.yaml" : "test.json")) << message;
  }
}

INSTANTIATE_TEST_SUITE_P(Inputs, MalformedTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.name);
                         });

TEST(MalformedCountTest, AtLeastFortyCases) { EXPECT_GE(Cases().size(), 40u); }

}  // namespace
}  // namespace accel::config
